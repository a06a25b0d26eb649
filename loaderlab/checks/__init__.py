"""Lab checkers, one module per lab: ``loaderlab.checks.labNN`` holds lab NN's ``check_*``.

A lab imports its checker from its own module and only from there
(``from loaderlab.checks.lab01 import check_loop_to_loader``): this package re-exports nothing.
Its scaffolding, when it has some, is ``loaderlab.labs.labNN``; ``report`` is what the checkers
share (the ``checker`` wrapper, ``Wrong``, the one-line errors).

Each checker prints one line, never a traceback: ``✅`` and a confirmation, ``❌`` and what is
wrong plus a hint (or the candidate's own error, on one line), ``⏳ not attempted yet`` for a stub.
Checkers run the candidate in real DataLoaders; they do not read its source.

| lab | checker |
|---|---|
| 01 loop → DataLoader | ``lab01.check_loop_to_loader`` |
| 02 train/validation loaders | ``lab02.check_split_loaders`` |
| 03 fast loader | ``lab03.check_fast_loader`` |
| 04 caching decoded samples | ``lab04.check_cached_loader`` |
| 05 pad_collate, bucketing | ``lab05.check_pad_collate``, ``lab05.check_bucket_batches`` |
| 06 copy-on-write fix | ``lab06.check_cow_fix`` |
| 07 worker seeding | ``lab07.check_seeded_dataset`` |
| 08 hang fix | ``lab08.check_hang_fix`` |
| 09 balanced weights | ``lab09.check_balanced_weights`` |
| 10 DDP epochs | ``lab10.check_ddp_epochs`` |
| 11 sharded IterableDataset | ``lab11.check_sharded_iterable`` |
| 12 spawn-safe loader | ``lab12.check_spawn_safe`` |
| 13 resumable dataset | ``lab13.check_resumable`` |
| 14 find the bottleneck | ``lab14.check_bottleneck`` |
| 15 too many open files | ``lab15.check_kept_batches`` (Linux only) |
| 21 skip corrupt samples | ``lab21.check_skip_broken_collate`` |
| 24 one thread per worker | ``lab24.check_one_thread_workers`` |
"""
