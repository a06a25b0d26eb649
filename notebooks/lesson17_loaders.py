"""Lesson 17, section 3: the course's broken loaders and their fixes, as functions that build them.

The doctor's tests and its command line (section 5) build them too. BROKEN and FIXED name the
finding each one is about.
"""

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
from torch.utils.data import DataLoader, DistributedSampler, default_collate


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


BROKEN = {  # loader -> the finding the doctor must report
    "broken_last_batch_of_one": "batch.last_size_1",
    "broken_too_few_workers": "speed.more_workers",
    "broken_cow_table": "memory.python_container",
    "broken_held_rng": "random.duplicate_across_workers",
    "broken_globals_reseeded_only": "random.duplicate_across_workers",
    "broken_inherited_numpy": "random.duplicate_across_workers",
    "broken_stale_epoch": "persistent.stale_state",
    "broken_distributed_order": "distributed.no_set_epoch",
    "broken_unsharded_stream": "iterable.duplicates",
    "broken_partial_batches": "iterable.partial_batches",
    "broken_lambda_collate": "pickle.fails",
}
FIXED = {  # loader -> the finding it fixes, which the doctor must no longer report
    "fixed_last_batch_of_one": "batch.last_size_1",
    "fixed_too_few_workers": "speed.more_workers",
    "fixed_cow_table": "memory.python_container",
    "fixed_held_rng": "random.duplicate_across_workers",
    "fixed_stale_epoch": "persistent.stale_state",
    "fixed_sharded_stream": "iterable.duplicates",
    "fixed_collate": "pickle.fails",
}
