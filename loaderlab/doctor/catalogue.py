"""The doctor's catalogue: the course's broken loaders, each next to its fix, as functions that
build them (``python -m loaderlab doctor loaderlab.doctor.catalogue:broken_held_rng``, from any folder;
``from loaderlab.doctor.catalogue import CATALOGUE`` in Python).

CATALOGUE maps each broken loader to the finding the doctor must report, its fixed counterpart
(no warning, no error) and the command-line options both are probed with. The seeding datasets
are notebook 07's (notebooks/lesson07_draws.py and lesson07_lazy_rng.py), imported, not written again.
"""

import importlib.util

import numpy as np
import torch
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    DistributedSampler,
    RandomSampler,
    Subset,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
)

from loaderlab.doctor.catalogue_datasets import (  # noqa: F401 - re-exported: the catalogue's one import
    LESSON07,
    Augmented,
    BlockShardedStream,
    Bytes,
    Computed,
    EpochSeen,
    FillsCache,
    H5Rows,
    Images,
    Labelled,
    LazyH5Rows,
    LazyRecords,
    Listed,
    NumpyRows,
    PackedRows,
    Photos,
    PilImages,
    Records,
    Rows,
    Samples,
    ShardedStream,
    SharedEpochSeen,
    ShuffledStridedStream,
    Stream,
    StridedStream,
    Tokens,
    UnpaddedShard,
    Whitened,
    class_weights,
    collate,
    inverse_frequency,
    lesson07,
    make_rows,
    one_thread,
    pad_collate,
    readable_indices,
    seed_from_worker_id,
    usable_cores,
)


def broken_last_batch_of_one() -> DataLoader:  # notebook 02: 65 = 8 x 8 + 1
    return DataLoader(Samples(65), batch_size=8, shuffle=True)


def fixed_last_batch_of_one() -> DataLoader:
    return DataLoader(Samples(65), batch_size=8, shuffle=True, drop_last=True)


def broken_too_few_workers() -> DataLoader:  # notebook 03: 20 ms per sample (a remote read), no worker
    return DataLoader(Samples(256, latency_s=0.02), batch_size=8)


def fixed_too_few_workers() -> DataLoader:
    return DataLoader(Samples(256, latency_s=0.02), batch_size=8, num_workers=4)


def broken_oversubscribed() -> DataLoader:  # notebook 03: samples that compute, 6 workers per core
    return DataLoader(Computed(512), batch_size=4, num_workers=6 * usable_cores())


def fixed_oversubscribed() -> DataLoader:
    return DataLoader(Computed(512), batch_size=4, num_workers=min(usable_cores(), 4))


def broken_weights_per_class() -> DataLoader:  # notebook 09: 2 class weights for 1,000 samples
    dataset = Labelled(1000)
    sampler = WeightedRandomSampler(inverse_frequency(dataset.targets), num_samples=1000)
    return DataLoader(dataset, batch_size=10, sampler=sampler)


def fixed_weights_per_sample() -> DataLoader:  # the class weights indexed by each sample's label
    dataset = Labelled(1000)
    weights = inverse_frequency(dataset.targets)[torch.tensor(dataset.targets)]
    return DataLoader(dataset, batch_size=10, sampler=WeightedRandomSampler(weights, num_samples=1000))


def broken_stream_batch_of_1() -> DataLoader:  # notebook 11: 41 items on 4 workers, worker 0 ends with 1
    return DataLoader(StridedStream(41), batch_size=10, num_workers=4)


def fixed_stream_batch_of_1() -> DataLoader:  # drop_last=True, shuffled each epoch: another item sits out
    return DataLoader(ShuffledStridedStream(41), batch_size=10, num_workers=4, drop_last=True)


def broken_stream_length() -> DataLoader:  # notebook 11: __len__ counts one worker's shard
    return DataLoader(ShardedStream(64, reported=32), batch_size=8, num_workers=2)


def fixed_stream_length() -> DataLoader:
    return DataLoader(ShardedStream(64), batch_size=8, num_workers=2)


def broken_read_only_array() -> DataLoader:  # torch warns: a tensor over a read-only NumPy buffer
    return DataLoader(Bytes(64), batch_size=8)


def fixed_read_only_array() -> DataLoader:
    return DataLoader(Bytes(64, copy=True), batch_size=8)


def broken_cow_table(rows: int = 150_000) -> DataLoader:  # notebook 06
    return DataLoader(Rows(make_rows(rows)), batch_size=512, num_workers=2)


def fixed_cow_table(rows: int = 150_000) -> DataLoader:
    return DataLoader(PackedRows(make_rows(rows)), batch_size=512, num_workers=2)


def broken_held_rng() -> DataLoader:  # notebook 07: section 1's loader
    return DataLoader(lesson07("HeldRng")(32), batch_size=4, shuffle=True, num_workers=2)


def fixed_held_rng() -> DataLoader:  # the one seeding recipe: a seed kept, the generator built in the worker
    return DataLoader(lesson07("LazyRng")(32), batch_size=4, shuffle=True, num_workers=2)


def broken_globals_reseeded_only() -> DataLoader:  # notebook 07: seeds the globals, not the held generator
    return DataLoader(
        lesson07("HeldRng")(32),
        batch_size=4,
        shuffle=True,
        num_workers=2,
        worker_init_fn=lesson07("seed_globals"),
    )


def broken_inherited_numpy() -> DataLoader:  # notebook 07: the parent's NumPy state (torch < 1.9)
    return DataLoader(
        lesson07("GlobalDraws")(32),
        batch_size=4,
        shuffle=True,
        num_workers=2,
        worker_init_fn=lesson07("InheritedNumpyState")(),
    )


def broken_stale_epoch() -> DataLoader:  # notebook 08: persistent workers keep their copy
    return DataLoader(EpochSeen(16), batch_size=4, num_workers=2, persistent_workers=True)


def fixed_stale_epoch() -> DataLoader:
    return DataLoader(SharedEpochSeen(16), batch_size=4, num_workers=2, persistent_workers=True)


def broken_distributed_order() -> DataLoader:  # notebook 10: rank 0 of 2, no process group needed
    dataset = Samples(64)
    return DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset, num_replicas=2, rank=0))


def set_sampler_epoch(loader: DataLoader, epoch: int) -> None:
    """The fix, in the training loop between epochs: a new shuffle every epoch."""
    loader.sampler.set_epoch(epoch)


def broken_unsharded_stream() -> DataLoader:  # notebook 11: both workers yield all 64 items
    return DataLoader(Stream(64), batch_size=8, num_workers=2)


def fixed_sharded_stream() -> DataLoader:  # 32 items per worker: 4 full batches each
    return DataLoader(ShardedStream(64), batch_size=8, num_workers=2)


def broken_partial_batches() -> DataLoader:  # notebook 11: 30 items per worker, each ends with a batch of 6
    return DataLoader(ShardedStream(60), batch_size=8, num_workers=2)


def broken_lambda_collate() -> DataLoader:  # notebook 12: spawn workers cannot import a lambda
    return DataLoader(Samples(32), batch_size=8, collate_fn=lambda batch: default_collate(batch))


def fixed_collate() -> DataLoader:
    return DataLoader(Samples(32), batch_size=8, collate_fn=collate)


def broken_seeded_from_worker_id() -> DataLoader:  # notebook 07: the same draws every epoch
    return DataLoader(
        lesson07("HeldRng")(32), batch_size=4, shuffle=True, num_workers=2, worker_init_fn=seed_from_worker_id
    )


def fixed_global_draws() -> DataLoader:  # torch reseeds the globals; claim C15's fix keeps it so
    return DataLoader(
        lesson07("GlobalDraws")(32),
        batch_size=4,
        shuffle=True,
        num_workers=2,
        worker_init_fn=lesson07("seed_globals"),
    )


def fixed_distributed_order() -> DataLoader:  # the same loader: the fix, set_epoch, is in the loop
    return broken_distributed_order()


def fixed_partial_batches() -> DataLoader:  # blocks of 8 per worker: one partial batch (4) in all
    return DataLoader(BlockShardedStream(60, block=8), batch_size=8, num_workers=2)


def broken_stream_drop_last() -> DataLoader:  # notebook 11 §4: 12 items per worker, 4 each dropped
    return DataLoader(ShardedStream(24), batch_size=8, num_workers=2, drop_last=True)


def fixed_stream_drop_last() -> DataLoader:  # blocks of 8: 16 + 8 items, full batches only
    return DataLoader(BlockShardedStream(24, block=8), batch_size=8, num_workers=2)


def broken_variable_length() -> DataLoader:  # notebook 05: default_collate cannot stack
    return DataLoader(Tokens(32), batch_size=8)


def fixed_variable_length() -> DataLoader:
    return DataLoader(Tokens(32), batch_size=8, collate_fn=pad_collate)


def broken_open_file() -> DataLoader:  # notebook 08: forked workers share the file's offset
    return DataLoader(Records(64), batch_size=8, num_workers=2)


def fixed_open_file() -> DataLoader:
    return DataLoader(LazyRecords(64), batch_size=8, num_workers=2)


def broken_distributed_padding() -> DataLoader:  # notebook 10: 10 samples on 4 ranks, 2 repeats
    dataset = Samples(10)
    sampler = DistributedSampler(dataset, num_replicas=4, rank=0, shuffle=False)
    return DataLoader(dataset, batch_size=4, sampler=sampler)


def broken_distributed_drop_last() -> DataLoader:  # notebook 10: 10 samples on 4 ranks, 2 dropped
    dataset = Samples(10)
    sampler = DistributedSampler(dataset, num_replicas=4, rank=0, shuffle=False, drop_last=True)
    return DataLoader(dataset, batch_size=4, sampler=sampler)


def fixed_distributed_shard() -> DataLoader:  # evaluation: every sample once, on one rank
    dataset = Samples(10)
    return DataLoader(dataset, batch_size=4, sampler=UnpaddedShard(dataset, num_replicas=4, rank=0))


def broken_shm() -> DataLoader:  # notebook 15: 12 MB float32 batches x 2 prefetched x 2 workers
    return DataLoader(Images(64), batch_size=64, num_workers=2)


def fixed_shm() -> DataLoader:  # uint8 across processes, converted after the transfer: 4x smaller
    return DataLoader(Images(64, dtype=torch.uint8), batch_size=64, num_workers=2)


def broken_weighted_mix() -> DataLoader:  # notebook 09: weights that grow with the class count
    dataset = Labelled(100)
    sampler = WeightedRandomSampler(class_weights(dataset.targets, power=1), num_samples=100)
    return DataLoader(dataset, batch_size=10, sampler=sampler)


def fixed_weighted_mix() -> DataLoader:  # inverse class frequency: half and half
    dataset = Labelled(100)
    sampler = WeightedRandomSampler(class_weights(dataset.targets, power=-1), num_samples=100)
    return DataLoader(dataset, batch_size=10, sampler=sampler)


def broken_worker_cache() -> DataLoader:  # notebook 04: each worker keeps 4 MB per sample it loads
    return DataLoader(FillsCache(64), batch_size=1, num_workers=2)


def fixed_worker_cache() -> DataLoader:
    return DataLoader(FillsCache(64, keep=False), batch_size=1, num_workers=2)


def broken_sequential_drop_last() -> DataLoader:  # notebook 02: the same 7 of 103 samples left out
    return DataLoader(Samples(103), batch_size=16, drop_last=True)


def fixed_sequential_drop_last() -> DataLoader:  # shuffled: a different remainder each epoch
    return DataLoader(Samples(103), batch_size=16, shuffle=True, drop_last=True)


def broken_corrupt_sample() -> DataLoader:  # notebook 21: one truncated file among 200
    return DataLoader(Photos(200, unreadable=(137,)), batch_size=8, shuffle=True)


def fixed_corrupt_sample() -> DataLoader:  # the readable indices, found once before training
    dataset = Photos(200, unreadable=(137,))
    return DataLoader(Subset(dataset, readable_indices(dataset)), batch_size=8, shuffle=True)


def broken_none_sample() -> DataLoader:  # notebook 21: missing files come back as None
    return DataLoader(Photos(200, unreadable=(3, 90), missing="none"), batch_size=8, shuffle=True)


def fixed_none_sample() -> DataLoader:
    dataset = Photos(200, unreadable=(3, 90), missing="none")
    return DataLoader(Subset(dataset, readable_indices(dataset)), batch_size=8, shuffle=True)


def broken_len_too_long() -> DataLoader:  # __len__ says 64, the list holds 50 files
    return DataLoader(Listed(50, length=64), batch_size=8, shuffle=True)


def fixed_len_too_long() -> DataLoader:  # __len__ = len(self.files)
    return DataLoader(Listed(50), batch_size=8, shuffle=True)


def broken_pil_images() -> DataLoader:  # PIL images reach default_collate
    return DataLoader(PilImages(32), batch_size=8, shuffle=True)


def fixed_pil_images() -> DataLoader:
    return DataLoader(PilImages(32, to_tensor=True), batch_size=8, shuffle=True)


def broken_float64_rows() -> DataLoader:  # NumPy rows: float64 batches for a float32 model
    return DataLoader(NumpyRows(64), batch_size=8, shuffle=True)


def fixed_float64_rows() -> DataLoader:
    return DataLoader(NumpyRows(64, dtype=np.float32), batch_size=8, shuffle=True)


def broken_batches_of_batches() -> DataLoader:  # a BatchSampler passed as sampler=: batches of [1, 8, ...]
    dataset = TensorDataset(torch.randn(64, 8), torch.arange(64) % 2)
    return DataLoader(dataset, sampler=BatchSampler(RandomSampler(dataset), batch_size=8, drop_last=False))


def fixed_batches_of_batches() -> DataLoader:
    dataset = TensorDataset(torch.randn(64, 8), torch.arange(64) % 2)
    sampler = BatchSampler(RandomSampler(dataset), batch_size=8, drop_last=False)
    return DataLoader(dataset, batch_sampler=sampler)


def broken_hdf5_handle() -> DataLoader:  # notebook 20: h5py.File opened in __init__
    return DataLoader(H5Rows(64), batch_size=8, num_workers=2)


def fixed_hdf5_handle() -> DataLoader:
    return DataLoader(LazyH5Rows(64), batch_size=8, num_workers=2)


def broken_threads_in_workers() -> DataLoader:  # notebook 24: BLAS threads in each of 2 workers
    return DataLoader(Whitened(64), batch_size=8, num_workers=2)


def fixed_threads_in_workers() -> DataLoader:
    return DataLoader(Whitened(64), batch_size=8, num_workers=2, worker_init_fn=one_thread)


def broken_eval_transforms() -> DataLoader:  # notebook 22: the training transforms on the evaluation loader
    return DataLoader(Augmented(64, train=True), batch_size=8)


def fixed_eval_transforms() -> DataLoader:
    return DataLoader(Augmented(64, train=False), batch_size=8)


def __getattr__(name: str):  # notebook 07's seeding datasets, by name, as the other datasets are
    if name in LESSON07:
        return lesson07(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


NO_SPEED = [
    "--probes",
    "pickling,samples,collate,coverage,stream,batches,random,persistent,samplers,containers,threads",
]
SPEED = ["--probes", "speed"]
THREADS = ["--probes", "threads"]
HOOK = ["--between-epochs", "loaderlab.doctor.catalogue:set_sampler_epoch"]
# broken -> (the finding, its fixed counterpart, options for both, extra options for the fix)
Pair = tuple[str, str, list[str], list[str]]
CATALOGUE: dict[str, Pair] = {
    "broken_last_batch_of_one": ("batch.last_size_1", "fixed_last_batch_of_one", NO_SPEED, []),
    "broken_too_few_workers": ("speed.more_workers", "fixed_too_few_workers", SPEED, []),
    "broken_oversubscribed": ("speed.workers_over_cores", "fixed_oversubscribed", SPEED, []),
    "broken_weights_per_class": ("sampler.weights_length", "fixed_weights_per_sample", NO_SPEED, []),
    "broken_stream_batch_of_1": ("iterable.batch_of_1", "fixed_stream_batch_of_1", NO_SPEED, []),
    "broken_stream_length": ("iterable.wrong_length", "fixed_stream_length", NO_SPEED, []),
    "broken_read_only_array": ("loader.warning", "fixed_read_only_array", NO_SPEED, []),
    "broken_cow_table": ("memory.python_container", "fixed_cow_table", NO_SPEED, []),
    "broken_worker_cache": ("memory.worker_growth", "fixed_worker_cache", [*SPEED, "--workers", "0,2"], []),
    "broken_held_rng": ("random.duplicate_across_workers", "fixed_held_rng", NO_SPEED, []),
    "broken_globals_reseeded_only": ("random.duplicate_across_workers", "fixed_held_rng", NO_SPEED, []),
    "broken_inherited_numpy": ("random.duplicate_across_workers", "fixed_global_draws", NO_SPEED, []),
    "broken_seeded_from_worker_id": ("random.repeats_across_epochs", "fixed_held_rng", NO_SPEED, []),
    "broken_stale_epoch": ("persistent.stale_state", "fixed_stale_epoch", NO_SPEED, []),
    "broken_distributed_padding": ("distributed.padding", "fixed_distributed_shard", NO_SPEED, []),
    "broken_distributed_drop_last": ("distributed.drops", "fixed_distributed_shard", NO_SPEED, []),
    "broken_weighted_mix": ("sampler.weighted_mix", "fixed_weighted_mix", NO_SPEED, []),
    "broken_unsharded_stream": ("iterable.duplicates", "fixed_sharded_stream", NO_SPEED, []),
    "broken_partial_batches": ("iterable.partial_batches", "fixed_partial_batches", NO_SPEED, []),
    "broken_stream_drop_last": ("iterable.lost_items", "fixed_stream_drop_last", NO_SPEED, []),
    "broken_variable_length": ("collate.variable_length", "fixed_variable_length", NO_SPEED, []),
    "broken_open_file": ("dataset.open_file", "fixed_open_file", NO_SPEED, []),
    "broken_shm": ("memory.shm_too_small", "fixed_shm", [*NO_SPEED, "--shm-mb", "32"], []),
    "broken_lambda_collate": ("pickle.fails", "fixed_collate", NO_SPEED, []),
    "broken_sequential_drop_last": ("batch.dropped_every_epoch", "fixed_sequential_drop_last", NO_SPEED, []),
    "broken_corrupt_sample": ("sample.raises", "fixed_corrupt_sample", NO_SPEED, []),
    "broken_none_sample": ("sample.none", "fixed_none_sample", NO_SPEED, []),
    "broken_len_too_long": ("dataset.len_too_long", "fixed_len_too_long", NO_SPEED, []),
    "broken_pil_images": ("collate.unsupported_type", "fixed_pil_images", NO_SPEED, []),
    "broken_float64_rows": ("batch.float64", "fixed_float64_rows", NO_SPEED, []),
    "broken_batches_of_batches": ("sampler.yields_batches", "fixed_batches_of_batches", NO_SPEED, []),
    "broken_threads_in_workers": ("workers.threads_oversubscribed", "fixed_threads_in_workers", THREADS, []),
    "broken_eval_transforms": ("random.eval_transforms", "fixed_eval_transforms", NO_SPEED, []),
}
if importlib.util.find_spec("h5py") is not None:  # h5py is optional: the pair exists where it is installed
    CATALOGUE["broken_hdf5_handle"] = ("dataset.open_handle", "fixed_hdf5_handle", NO_SPEED, [])
# a note (what the doctor cannot see: the training loop) -> its fix, options, the fix's options
NOTES: dict[str, Pair] = {
    "broken_distributed_order": ("distributed.no_set_epoch", "fixed_distributed_order", NO_SPEED, HOOK),
}
BROKEN = {broken: code for broken, (code, *_) in CATALOGUE.items()}  # loader -> the finding it must get
FIXED = {fixed: code for code, fixed, *_ in CATALOGUE.values()}  # loader -> a finding it must not get


def typical_loader() -> DataLoader:  # no pitfall: 1 ms reads, shuffled, 2 workers (the doctor's timing case)
    return DataLoader(Samples(2048, latency_s=0.001), batch_size=32, shuffle=True, num_workers=2)
