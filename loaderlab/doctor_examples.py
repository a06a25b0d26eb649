"""Broken and fixed DataLoaders from the course, as factories the doctor can be run on.

Each ``broken_*`` factory rebuilds a pitfall reproduced in a notebook (with the course's own
datasets) and ``EXPECTED[name]`` is the finding code the doctor must report for it; each
``fixed_*`` factory is the same loader with the notebook's fix, on which the doctor must
report no warning or error. They live in the package so that ``spawn`` workers can unpickle
everything they hold, and so that ``python -m loaderlab doctor
loaderlab.doctor_examples:broken_held_rng`` works from any directory.
"""

from __future__ import annotations

from typing import Any

from torch.utils.data import DataLoader, default_collate
from torch.utils.data.distributed import DistributedSampler

from loaderlab.cow import PackedRowLengths, RowLengths, pack_rows
from loaderlab.data import make_metadata
from loaderlab.datasets import LatencyDataset
from loaderlab.failures import EpochDataset
from loaderlab.seeding import (
    GlobalDraws,
    HeldGeneratorDraws,
    InheritedNumpyState,
    reseed_from_worker_info,
)
from loaderlab.streaming import RangeStream, WorkerShardedStream


def module_collate(batch: list[Any]) -> Any:
    """Return ``default_collate(batch)``: a collate_fn defined at module level (picklable)."""
    return default_collate(batch)


# ------------------------------------------------------------------ broken (notebook pitfalls)


def broken_last_batch_of_one() -> DataLoader:
    """Return a loader whose epoch ends with a batch of 1 sample (65 samples, batches of 8; nb 02)."""
    return DataLoader(LatencyDataset(n=65, latency_s=0.0), batch_size=8, shuffle=True)


def broken_held_rng() -> DataLoader:
    """Return a loader whose dataset holds its own generator, copied into every worker (nb 07)."""
    return DataLoader(HeldGeneratorDraws(n=32, kind="numpy"), batch_size=4, num_workers=2)


def broken_globals_reseeded_only() -> DataLoader:
    """Return a loader with the classic worker_init_fn that reseeds the *global* generators:
    the dataset's own generator still repeats in every worker (nb 07, section 4)."""
    from loaderlab.seeding import seed_globals_from_initial_seed

    dataset = HeldGeneratorDraws(n=32, kind="torch")
    return DataLoader(dataset, batch_size=4, num_workers=2, worker_init_fn=seed_globals_from_initial_seed)


def broken_inherited_numpy() -> DataLoader:
    """Return a loader whose workers restore the parent's NumPy state (torch < 1.9 behaviour):
    ``np.random`` draws repeat across workers (nb 07)."""
    return DataLoader(GlobalDraws(n=32), batch_size=4, num_workers=2, worker_init_fn=InheritedNumpyState())


def broken_unsharded_stream() -> DataLoader:
    """Return a loader over a stream that every worker reads whole (nb 11, section 1)."""
    return DataLoader(RangeStream(64), batch_size=8, num_workers=2)


def broken_partial_batches() -> DataLoader:
    """Return a sharded stream of 60 items, 2 workers, batches of 8: each worker ends with its
    own batch of 6 (nb 11, section 4)."""
    return DataLoader(WorkerShardedStream(60), batch_size=8, num_workers=2)


def broken_lambda_collate() -> DataLoader:
    """Return a loader whose collate_fn is a lambda: spawn and forkserver workers cannot receive it (nb 12)."""
    return DataLoader(LatencyDataset(n=32, latency_s=0.0), batch_size=8, collate_fn=lambda b: default_collate(b))


def broken_stale_epoch() -> DataLoader:
    """Return persistent workers over a dataset whose ``epoch`` is a plain int set in the main
    process: the workers keep reading epoch 0 (nb 08, section 4)."""
    return DataLoader(EpochDataset(n=16, shared=False), batch_size=4, num_workers=2, persistent_workers=True)


def broken_distributed_order() -> DataLoader:
    """Return rank 0 of 2 under a shuffling DistributedSampler (no process group needed); run
    without set_epoch every epoch repeats the same order (nb 10, section 2)."""
    dataset = LatencyDataset(n=64, latency_s=0.0)
    return DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True))


def broken_cow_table(rows: int = 150_000) -> DataLoader:
    """Return a loader over a Python list of ``rows`` strings read by 2 workers (nb 06)."""
    return DataLoader(RowLengths(make_metadata(rows)), batch_size=512, num_workers=2)


def broken_too_few_workers() -> DataLoader:
    """Return a loader whose samples take 10 ms each (a remote read) in the main process (nb 03)."""
    return DataLoader(LatencyDataset(n=128, latency_s=0.01), batch_size=8)


BROKEN = {
    "broken_last_batch_of_one": "batch.last_size_1",
    "broken_held_rng": "random.duplicate_across_workers",
    "broken_globals_reseeded_only": "random.duplicate_across_workers",
    "broken_inherited_numpy": "random.duplicate_across_workers",
    "broken_unsharded_stream": "iterable.duplicates",
    "broken_partial_batches": "iterable.partial_batches",
    "broken_lambda_collate": "pickle.fails",
    "broken_stale_epoch": "persistent.stale_state",
    "broken_distributed_order": "distributed.no_set_epoch",
    "broken_cow_table": "memory.python_container",
    "broken_too_few_workers": "speed.more_workers",
}


# --------------------------------------------------------------------------- fixed versions


def fixed_last_batch_of_one() -> DataLoader:
    """Return the 65-sample loader with ``drop_last=True``."""
    return DataLoader(LatencyDataset(n=65, latency_s=0.0), batch_size=8, shuffle=True, drop_last=True)


def fixed_held_rng() -> DataLoader:
    """Return the held-generator loader with ``worker_init_fn=reseed_from_worker_info``."""
    return DataLoader(
        HeldGeneratorDraws(n=32, kind="numpy"), batch_size=4, num_workers=2, worker_init_fn=reseed_from_worker_info
    )


def fixed_sharded_stream() -> DataLoader:
    """Return the stream sharded per worker, 64 items = 4 full batches per worker."""
    return DataLoader(WorkerShardedStream(64), batch_size=8, num_workers=2)


def fixed_collate() -> DataLoader:
    """Return the loader with a module-level collate_fn."""
    return DataLoader(LatencyDataset(n=32, latency_s=0.0), batch_size=8, collate_fn=module_collate)


def fixed_stale_epoch() -> DataLoader:
    """Return persistent workers over a dataset whose epoch lives in a shared-memory tensor."""
    return DataLoader(EpochDataset(n=16, shared=True), batch_size=4, num_workers=2, persistent_workers=True)


def fixed_cow_table(rows: int = 150_000) -> DataLoader:
    """Return the table packed into one byte buffer plus offsets, read by 2 workers."""
    return DataLoader(PackedRowLengths(*pack_rows(make_metadata(rows))), batch_size=512, num_workers=2)


def fixed_too_few_workers() -> DataLoader:
    """Return the 10 ms-per-sample loader with 4 workers."""
    return DataLoader(LatencyDataset(n=128, latency_s=0.01), batch_size=8, num_workers=4)


def set_sampler_epoch(loader: DataLoader, epoch: int) -> None:
    """Return None after calling ``loader.sampler.set_epoch(epoch)``: what a training loop
    does between epochs (pass it to ``doctor(..., between_epochs=...)``)."""
    loader.sampler.set_epoch(epoch)  # type: ignore[union-attr]


# fixed factory -> the code of the pitfall it fixes (which the doctor must no longer report)
FIXED = {
    "fixed_last_batch_of_one": "batch.last_size_1",
    "fixed_held_rng": "random.duplicate_across_workers",
    "fixed_sharded_stream": "iterable.duplicates",
    "fixed_collate": "pickle.fails",
    "fixed_stale_epoch": "persistent.stale_state",
    "fixed_cow_table": "memory.python_container",
    "fixed_too_few_workers": "speed.more_workers",
}
