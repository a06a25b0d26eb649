"""Lab checkers: ``check_<name>(candidate) -> bool``, one per exercise.

Each prints one line, never a traceback: ``✅`` and a confirmation, ``❌`` and what is wrong
plus a hint (or the candidate's own error, on one line), ``⏳ not attempted yet`` for a stub.
Checkers run the candidate in real DataLoaders; they do not read its source.

| lab | checker |
|---|---|
| 01 loop → DataLoader | ``check_loop_to_loader`` |
| 02 train/validation loaders | ``check_split_loaders`` |
| 03 fast loader | ``check_fast_loader`` |
| 04 caching decoded samples | ``check_cached_loader`` |
| 05 pad_collate, bucketing | ``check_pad_collate``, ``check_bucket_batches`` |
| 06 copy-on-write fix | ``check_cow_fix`` |
| 07 worker seeding | ``check_seeded_dataset`` |
| 08 hang fix | ``check_hang_fix`` |
| 09 balanced weights | ``check_balanced_weights`` |
| 10 DDP epochs | ``check_ddp_epochs`` |
| 11 sharded IterableDataset | ``check_sharded_iterable`` |
| 12 spawn-safe loader | ``check_spawn_safe`` |
| 13 resumable dataset | ``check_resumable`` |
| 14 find the bottleneck | ``check_bottleneck`` |
| 15 too many open files | ``check_kept_batches`` (Linux only) |
| 24 one thread per worker | ``check_one_thread_workers`` |
"""

from loaderlab.checks.caching import check_cached_loader  # noqa: I001
from loaderlab.checks.collate import check_bucket_batches, check_pad_collate
from loaderlab.checks.distributed import check_ddp_epochs
from loaderlab.checks.descriptors import check_kept_batches
from loaderlab.checks.bottleneck import check_bottleneck
from loaderlab.checks.hangs import check_hang_fix
from loaderlab.checks.loops import check_loop_to_loader
from loaderlab.checks.memory import check_cow_fix
from loaderlab.checks.report import CheckerTypeError, CheckerValueError, Wrong, checker, one_line
from loaderlab.checks.resume import check_resumable
from loaderlab.checks.sampling import check_balanced_weights
from loaderlab.checks.seeding import check_seeded_dataset
from loaderlab.checks.spawn import check_spawn_safe
from loaderlab.checks.speed import check_fast_loader
from loaderlab.checks.splits import check_split_loaders
from loaderlab.checks.streaming import check_sharded_iterable
from loaderlab.checks.threads import check_one_thread_workers

__all__ = [
    "Wrong", "checker", "one_line", "CheckerTypeError", "CheckerValueError",
    "check_loop_to_loader", "check_fast_loader", "check_pad_collate", "check_bucket_batches",
    "check_cow_fix", "check_seeded_dataset", "check_hang_fix", "check_balanced_weights",
    "check_ddp_epochs", "check_sharded_iterable", "check_resumable", "check_bottleneck",
    "check_kept_batches", "check_split_loaders", "check_cached_loader", "check_spawn_safe",
    "check_one_thread_workers",
]
