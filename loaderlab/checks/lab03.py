"""Checker for lab 03: the lab's slow loader (a 40 ms sleep per sample, ``batch_size=8``, a fixed
``sampler``, no workers) made >= 4x faster by ``tune(loader)``, batches unchanged.

The speed-up is judged against the waiting the starting loader owes, not against a second timing:
it reads one sample at a time, so a pass owes ``len(dataset) × latency_s`` seconds (the dataset's
own ``latency_s``). The answer's best whole pass (worker start-up included, best of 2) must take at
most a quarter of that. Noise (a busy machine) can only make a pass slower, never faster, so an
answer cannot pass by luck. The answer is judged, not the setup: the starting dataset's attributes
must be as they were (an answer that sets its ``latency_s`` to 0 fails), and after the answer ran
the starting loader must still wait what it owes over 3 batches (an answer that makes waiting
itself faster, e.g. by replacing ``time.sleep``, fails: its reads took microseconds)."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from torch.utils.data import DataLoader

from loaderlab.checks.report import Wrong, as_loader, bounded, checker, compare, starting_loader
from loaderlab.loaders import batch_size_of, same_batch, stop_workers
from loaderlab.measure import timed_pass

HINT = (
    "Hint: notebook 03, section 2 'How many workers?', notebook 19, section 1 (persistent_workers), or "
    "notebook 04, section 3 'Fetching a whole batch at once: `__getitems__`'."
)
MIN_SPEEDUP = 4.0
# A pass is stopped after this many times the time of a pass exactly MIN_SPEEDUP faster: it
# cannot pass (a 1-worker loader would take 13 s over the lab's 324 samples).
PASS_LIMIT_FACTOR = 1.5
BOUND_S = 120.0  # the whole check (seconds normally), for a read in this process that never returns
RECHECK_BATCHES = 3  # batches of the starting loader read again after the answer ran
# time.sleep(s) returns after at least s (CPython, every OS): a read that owes s and took less than
# this share of it did not wait. The margin is for clocks that tick coarser than the sleep.
STILL_WAITS = 0.9


def reference_batches(loader: DataLoader) -> list[Any]:
    """Return the batches of ``loader`` (no workers), its samples fetched in 64 threads."""
    with ThreadPoolExecutor(64) as pool:
        return [
            loader.collate_fn(list(pool.map(loader.dataset.__getitem__, indices)))
            for indices in loader.batch_sampler
        ]


def _diagnose_batches(batches: list[Any], expected: list[Any], complete: bool, batch_size: int) -> None:
    """Raise Wrong with the first way ``batches`` (a whole pass, or its start) differ."""
    sizes = [batch_size_of(b) for b in batches]
    wanted = [batch_size_of(b) for b in expected]
    if complete and sizes == wanted[:-1]:
        raise Wrong(
            f"the last, incomplete batch ({wanted[-1]} samples) is missing: keep "
            f"drop_last=False so the batches stay the same. {HINT}"
        )
    compare(
        batches,
        expected,
        sizes=True,
        prefix=not complete,
        count=f"your loader yields batches of {max(sizes, default=0)} samples, the starting "
        f"loader batches of {batch_size}: keep batch_size={batch_size} (a bigger "
        f"batch changes every batch). {HINT}",
        differ=lambda k: (
            f"batch {k} holds other samples than the starting loader's batch {k}: keep "
            f"its sampler (shuffle=True draws a new order). {HINT}"
        ),
    )


def _attributes(dataset: Any) -> dict[str, Any]:
    """Return a copy of ``dataset``'s attributes, to tell later whether an answer changed them."""
    return copy.deepcopy(getattr(dataset, "__dict__", {}))


def _require_unchanged(dataset: Any, before: dict[str, Any]) -> None:
    """Raise Wrong naming the attributes of the starting dataset that differ from ``before``."""
    after = getattr(dataset, "__dict__", {})
    changed = [
        name
        for name in sorted({*before, *after})
        if name not in before or name not in after or not same_batch(before[name], after[name])
    ]
    if changed:
        shown = ", ".join(
            f"{n}: {_short(before.get(n, '(none)'))} → {_short(after.get(n, '(none)'))}" for n in changed[:3]
        )
        raise Wrong(
            f"tune(loader) changed the starting loader's dataset ({shown}): the storage is the "
            f"setup, not the answer; leave the dataset as it is and let more samples wait at "
            f"the same time. {HINT}"
        )


def _short(value: Any) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 30 else text[:27] + "..."


def waiting_owed_s(loader: DataLoader, samples: int) -> float:
    """Return the seconds ``loader`` (no workers: one read at a time) owes for ``samples`` reads:
    ``samples × loader.dataset.latency_s``; raise Wrong when the dataset does not say its latency."""
    latency_s = getattr(loader.dataset, "latency_s", None)
    if isinstance(latency_s, bool) or not isinstance(latency_s, (int, float)) or latency_s <= 0:
        raise Wrong(
            "check_fast_loader(tune, slow_loader) needs the lab's starting loader, whose dataset "
            "waits latency_s > 0 seconds per read: run the cell that builds it."
        )
    return samples * float(latency_s)


def waited(seconds: float, owed_s: float) -> bool:
    """Return whether reads that owe ``owed_s`` seconds of waiting took at least STILL_WAITS of it."""
    return seconds >= STILL_WAITS * owed_s


@checker
def check_fast_loader(tune: Callable[[DataLoader], DataLoader], slow_loader: DataLoader) -> str:
    """Check that ``tune(slow_loader)`` yields the same batches as ``slow_loader`` at >= 4x
    its throughput (the waiting it owes: one read of ``latency_s`` at a time)."""
    starting_loader(slow_loader, "check_fast_loader(tune, slow_loader)")
    samples = len(slow_loader.dataset)
    owed_s = waiting_owed_s(slow_loader, samples)  # one whole pass of the starting loader
    expected = reference_batches(slow_loader)
    before = _attributes(slow_loader.dataset)
    overran = f"the check took over {BOUND_S:g} s: does every __getitem__ return? {HINT}"
    with warnings.catch_warnings(), bounded(BOUND_S, overran):  # torch warns above the CPU count
        warnings.filterwarnings("ignore", message="This DataLoader will create")
        tuned = as_loader(tune(slow_loader), "tune(loader)", HINT)
        limit_s = PASS_LIMIT_FACTOR * owed_s / MIN_SPEEDUP
        if tuned.num_workers > 0:
            tuned.timeout = limit_s  # a worker that takes longer cannot pass: stop waiting
        passes = []
        try:
            for _ in range(2):  # stopped after limit_s; a DataLoader timeout ends it the same way
                run = timed_pass(tuned, seconds=limit_s, count_startup=True, keep=True, catch=True, kill=True)
                if run.error is not None and "DataLoader timed out" not in str(run.error):
                    raise run.error
                _diagnose_batches(run.values, expected, run.finished, slow_loader.batch_size)
                passes.append((run.samples / run.seconds, run.seconds, run.first_batch_s))
                if not run.finished:
                    break  # too slow already, and a new pass would start workers again
        finally:  # persistent workers stay in tuned._iterator: the checker owns them, stops them
            stop_workers(getattr(tuned, "_iterator", None))
    _require_unchanged(slow_loader.dataset, before)
    # read again: an answer that made waiting itself faster made the starting loader faster too
    again = timed_pass(slow_loader, max_batches=RECHECK_BATCHES)
    again_owed_s = waiting_owed_s(slow_loader, again.samples)
    if not waited(again.seconds, again_owed_s):
        raise Wrong(
            f"after tune(loader) ran, the starting loader read {again.samples} samples in "
            f"{again.seconds * 1000:.1f} ms, but they owe {again_owed_s * 1000:.0f} ms of waiting: "
            f"your code made waiting itself faster (replaced time.sleep?), not the loader. {HINT}"
        )
    rate, seconds, first_batch_s = max(passes)
    speedup = rate * owed_s / samples  # the starting loader delivers samples / owed_s per second at best
    if speedup < MIN_SPEEDUP and tuned.num_workers > 0 and first_batch_s > 0.5 * seconds:
        raise Wrong(
            f"same batches, but only {speedup:.1f}x the starting throughput: waiting for the "
            f"first batch took {first_batch_s:.1f} s of the {seconds:.1f} s pass, starting the "
            f"workers (under spawn each one imports torch again); persistent_workers=True pays "
            f"that once, threads never. {HINT}"
        )
    if speedup < MIN_SPEEDUP:
        raise Wrong(
            f"same batches, but only {speedup:.1f}x the starting throughput; the goal is "
            f"{MIN_SPEEDUP:.0f}x: the samples wait on (simulated) I/O, so more of them "
            f"must wait at the same time. {HINT}"
        )
    return f"same batches, at least {MIN_SPEEDUP:.0f}x the starting throughput"
