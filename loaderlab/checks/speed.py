"""Checker for lab 03: make a slow, I/O-bound loader at least 4x faster without changing its batches.

The lab builds the starting loader in a visible cell: ``LatencyDataset(n=324, latency_s=0.04)``
from notebook 03's ``lesson03.py`` (every sample sleeps 40 ms, like a remote read),
``batch_size=8`` (the last batch holds 4), a fixed shuffled order given as ``sampler``,
``num_workers=0``, and passes it: ``check_fast_loader(tune, slow_loader)``. The student's
``tune(loader) -> DataLoader`` returns a faster loader. The checker compares its batches with
the starting loader's, exactly (``loaderlab.loaders.same_batch``; the reference batches are
fetched in threads, so they cost no 13 s), and its throughput (samples/s over a whole pass,
worker start-up included; best of 2 passes) with the starting loader's (best of 2 short
passes). Waiting is sleep, so the ratio barely depends on how busy the CPUs are.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from torch.utils.data import DataLoader

from loaderlab._validate import require_loader
from loaderlab.checks.report import Wrong, checker
from loaderlab.loaders import batch_size_of, same_batch, stop_workers
from loaderlab.measure import throughput, timed_pass

HINT = ("Hint: notebook 03, sections 2 'How many workers?' and 5 (persistent_workers), or "
        "notebook 04, section 3 'Fetching a whole batch at once: `__getitems__`'.")
MIN_SPEEDUP = 4.0
BASELINE_BATCHES = 3
# A pass that runs longer than this many times the pass time of a loader exactly MIN_SPEEDUP
# times faster is stopped: it cannot pass, and a 1-worker loader would take 13 s per pass of
# the lab's 324 samples.
# After a pass stopped that way, a second one runs only for persistent workers.
PASS_LIMIT_FACTOR = 1.5


REFERENCE_THREADS = 64


def reference_batches(loader: DataLoader) -> list[Any]:
    """Return the batches of ``loader`` (no workers), its samples fetched in threads: the same
    values in the same order, without waiting for one read after the other."""
    with ThreadPoolExecutor(REFERENCE_THREADS) as pool:
        return [loader.collate_fn(list(pool.map(loader.dataset.__getitem__, indices)))
                for indices in loader.batch_sampler]


def _require_starting_loader(slow_loader: Any) -> None:
    """Raise Wrong unless ``slow_loader`` looks like the lab's starting loader."""
    if not isinstance(slow_loader, DataLoader):
        raise Wrong(f"check_fast_loader(tune, slow_loader) needs the lab's starting DataLoader as "
                    f"slow_loader, got {type(slow_loader).__name__}: run the cell that builds it.")
    if slow_loader.num_workers or slow_loader.batch_sampler is None:
        raise Wrong("slow_loader must be the lab's starting loader (batch_size=8, num_workers=0, a "
                    "sampler): pass the loader the lab builds, and your faster one through tune.")


def _diagnose_batches(batches: list[Any], expected: list[Any], complete: bool, batch_size: int) -> None:
    """Raise Wrong with the first way ``batches`` (a whole pass, or its start) differ."""
    sizes = [batch_size_of(b) for b in batches]
    wanted = [batch_size_of(b) for b in expected]
    prefix = wanted[: len(sizes)] if not complete else wanted
    if sizes != prefix:
        if complete and sizes == wanted[:-1]:
            raise Wrong(f"the last, incomplete batch ({wanted[-1]} samples) is missing: keep "
                        f"drop_last=False so the batches stay the same. {HINT}")
        raise Wrong(f"your loader yields batches of {max(sizes, default=0)} samples, the starting "
                    f"loader batches of {batch_size}: keep batch_size={batch_size} (a bigger "
                    f"batch changes every batch). {HINT}")
    for k, (batch, reference) in enumerate(zip(batches, expected, strict=False)):
        if not same_batch(batch, reference):
            raise Wrong(f"batch {k} holds other samples than the starting loader's batch {k}: keep "
                        f"its sampler (shuffle=True draws a new order). {HINT}")


@checker
def check_fast_loader(tune: Callable[[DataLoader], DataLoader], slow_loader: DataLoader) -> str:
    """Check that ``tune(slow_loader)`` yields the same batches as ``slow_loader`` at >= 4x
    its throughput."""
    _require_starting_loader(slow_loader)
    expected = reference_batches(slow_loader)
    base = max(throughput(slow_loader, max_batches=BASELINE_BATCHES).samples_per_s for _ in range(2))
    with warnings.catch_warnings():
        # torch warns when num_workers exceeds the CPU count; these workers sleep, not compute.
        warnings.filterwarnings("ignore", message="This DataLoader will create")
        tuned = tune(slow_loader)
        try:
            require_loader(tuned, "tune(loader)'s result")
        except TypeError as exc:
            raise Wrong(f"{exc}. {HINT}") from None
        limit_s = PASS_LIMIT_FACTOR * len(slow_loader.dataset) / (MIN_SPEEDUP * base)
        if tuned.num_workers > 0:
            tuned.timeout = limit_s  # a worker that takes longer cannot pass: stop waiting
        passes = []
        try:
            for _ in range(2):
                # timed_pass: stopped after limit_s; a DataLoader timeout ends it like the limit
                run = timed_pass(tuned, seconds=limit_s, count_startup=True, keep=True, catch=True, kill=True)
                if run.error is not None and "DataLoader timed out" not in str(run.error):
                    raise run.error
                _diagnose_batches(run.values, expected, run.finished, slow_loader.batch_size)
                passes.append((run.samples / run.seconds, run.seconds, run.first_batch_s))
                if not run.finished:
                    break  # too slow already, and a new pass would start workers again
        finally:
            # persistent_workers keeps the workers in tuned._iterator between passes; the
            # checker owns the tuned loader, so it shuts them down to leave no process behind.
            stop_workers(getattr(tuned, "_iterator", None))
            tuned._iterator = None
    rate, seconds, first_batch_s = max(passes)
    speedup = rate / base
    if speedup < MIN_SPEEDUP and first_batch_s > 0.5 * seconds:
        raise Wrong(f"same batches, but only {speedup:.1f}x the starting throughput: waiting for the "
                    f"first batch took {first_batch_s:.1f} s of the {seconds:.1f} s pass, starting the workers "
                    f"(under spawn each one imports torch again); persistent_workers=True pays "
                    f"that once, threads never. {HINT}")
    if speedup < MIN_SPEEDUP:
        raise Wrong(f"same batches, but only {speedup:.1f}x the starting throughput; the goal is "
                    f"{MIN_SPEEDUP:.0f}x: the samples wait on (simulated) I/O, so more of them "
                    f"must wait at the same time. {HINT}")
    return f"same batches, at least {MIN_SPEEDUP:.0f}x the starting throughput"
