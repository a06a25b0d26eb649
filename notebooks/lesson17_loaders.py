"""Lesson 17, section 3: the course's broken loaders and their fixes, as functions that build them.

The doctor's tests and its command line (section 5) build them too. CATALOGUE maps each broken
loader to the finding the doctor must report, its fixed counterpart (no warning, no error) and
the command-line options both are probed with.
"""

import torch
from lesson17 import HeldRng
from lesson17_b import reseed_worker
from lesson17_c import GlobalDraws, InheritedNumpyState, seed_globals
from lesson17_d import (
    EpochSeen,
    PackedRows,
    Rows,
    Samples,
    ShardedStream,
    SharedEpochSeen,
    Stream,
    collate,
    make_rows,
)
from lesson17_e import (
    BlockShardedStream,
    FillsCache,
    Images,
    Labelled,
    LazyRecords,
    Records,
    Tokens,
    UnpaddedShard,
    class_weights,
    pad_collate,
    seed_from_worker_id,
)
from torch.utils.data import DataLoader, DistributedSampler, WeightedRandomSampler, default_collate


def broken_last_batch_of_one() -> DataLoader:  # notebook 02: 65 = 8 x 8 + 1
    return DataLoader(Samples(65), batch_size=8, shuffle=True)


def fixed_last_batch_of_one() -> DataLoader:
    return DataLoader(Samples(65), batch_size=8, shuffle=True, drop_last=True)


def broken_too_few_workers() -> DataLoader:  # notebook 03: 10 ms per sample, in the main process
    return DataLoader(Samples(128, latency_s=0.01), batch_size=8)


def fixed_too_few_workers() -> DataLoader:
    return DataLoader(Samples(128, latency_s=0.01), batch_size=8, num_workers=4)


def broken_cow_table(rows: int = 150_000) -> DataLoader:  # notebook 06
    return DataLoader(Rows(make_rows(rows)), batch_size=512, num_workers=2)


def fixed_cow_table(rows: int = 150_000) -> DataLoader:
    return DataLoader(PackedRows(make_rows(rows)), batch_size=512, num_workers=2)


def broken_held_rng() -> DataLoader:  # notebook 07: section 1's loader
    return DataLoader(HeldRng(32), batch_size=4, num_workers=2)


def fixed_held_rng() -> DataLoader:
    return DataLoader(HeldRng(32), batch_size=4, num_workers=2, worker_init_fn=reseed_worker)


def broken_globals_reseeded_only() -> DataLoader:  # notebook 07: seeds the globals, not the held generator
    return DataLoader(HeldRng(32), batch_size=4, num_workers=2, worker_init_fn=seed_globals)


def broken_inherited_numpy() -> DataLoader:  # notebook 07: the parent's NumPy state (torch < 1.9)
    return DataLoader(GlobalDraws(32), batch_size=4, num_workers=2, worker_init_fn=InheritedNumpyState())


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
    return DataLoader(HeldRng(32), batch_size=4, num_workers=2, worker_init_fn=seed_from_worker_id)


def fixed_global_draws() -> DataLoader:  # torch reseeds the globals; claim C15's fix keeps it so
    return DataLoader(GlobalDraws(32), batch_size=4, num_workers=2, worker_init_fn=seed_globals)


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


NO_SPEED = ["--probes", "pickling,collate,stream,batches,random,persistent,samplers,containers"]
SPEED = ["--probes", "speed"]
HOOK = ["--between-epochs", "lesson17_loaders:set_sampler_epoch"]
CATALOGUE = {  # broken -> (the finding, its fixed counterpart, options for both, extra options for the fix)
    "broken_last_batch_of_one": ("batch.last_size_1", "fixed_last_batch_of_one", NO_SPEED, []),
    "broken_too_few_workers": ("speed.more_workers", "fixed_too_few_workers", SPEED, []),
    "broken_cow_table": ("memory.python_container", "fixed_cow_table", NO_SPEED, []),
    "broken_worker_cache": ("memory.worker_growth", "fixed_worker_cache", [*SPEED, "--workers", "0,2"], []),
    "broken_held_rng": ("random.duplicate_across_workers", "fixed_held_rng", NO_SPEED, []),
    "broken_globals_reseeded_only": ("random.duplicate_across_workers", "fixed_held_rng", NO_SPEED, []),
    "broken_inherited_numpy": ("random.duplicate_across_workers", "fixed_global_draws", NO_SPEED, []),
    "broken_seeded_from_worker_id": ("random.repeats_across_epochs", "fixed_held_rng", NO_SPEED, []),
    "broken_stale_epoch": ("persistent.stale_state", "fixed_stale_epoch", NO_SPEED, []),
    "broken_distributed_order": ("distributed.no_set_epoch", "fixed_distributed_order", NO_SPEED, HOOK),
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
}
BROKEN = {broken: code for broken, (code, *_) in CATALOGUE.items()}  # loader -> the finding it must get
FIXED = {fixed: code for code, fixed, *_ in CATALOGUE.values()}  # loader -> a finding it must not get
