"""Checker for lab 14: measure the data wait of a pipeline, then fix its slow stage. The wait inside
``next(loader)`` against a ``STEP_S`` sleep step (each worker's first batch left out) must be over
``BEFORE_MIN`` for the starting loader and under ``AFTER_MAX`` and half that for ``fix(slow_loader)``
(same batches); the student's ``measure`` must agree within ``AGREE``. Stages are sleeps too."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

from torch.utils.data import DataLoader

from loaderlab.checks.lab03 import reference_batches
from loaderlab.checks.report import Wrong, as_loader, bounded, checker, compare, starting_loader
from loaderlab.env import can_fork
from loaderlab.loaders import batch_size_of, rebuild
from loaderlab.measure import timed_pass

HINT = "Hint: notebook 14, section 1 'Data wait vs compute, per step'"
STEP_S = 0.04  # the lab's train_step
BEFORE_MIN, AFTER_MAX, AGREE = 0.5, 0.25, 0.15
LIMIT_S = 4.0  # a pass stops after this long: a loader that slow cannot pass
BOUND_S = 60.0  # the whole check, for a __getitem__ that never returns (the lab's takes seconds)


def _step(batch: Any) -> None:
    time.sleep(STEP_S)


def _timed(loader: DataLoader, max_batches: int | None = None) -> tuple[list[Any], float]:
    """Return (batches, wait share) of one pass, each worker's first batch left out."""
    run = timed_pass(
        loader, max_batches, seconds=LIMIT_S, step=_step, count_startup=True, keep=True, close=True
    )
    skip = min(max(1, loader.num_workers), run.batches // 2)
    wait, step = sum(run.waits_s[skip:]), sum(run.steps_s[skip:])
    return run.values, wait / (wait + step) if wait + step else 1.0


def _agree(measure: Callable[..., Any], loader: DataLoader, share: float, which: str) -> None:
    theirs = measure(loader, _step)
    if isinstance(theirs, bool) or not isinstance(theirs, (int, float)) or abs(theirs - share) > AGREE:
        raise Wrong(
            f"your wait_share returned {theirs!r:.6} for {which}, the checker measured {share:.2f}: "
            f"time the wait inside next(loader) apart from the step, leave the first batch out, "
            f"and return wait / (wait + step), a fraction of 1. {HINT}"
        )


@checker
def check_bottleneck(
    fix: Callable[[DataLoader], DataLoader],
    slow_loader: DataLoader,
    measure: Callable[..., float] | None = None,
) -> str:
    """Return a confirmation if ``fix(slow_loader)`` yields the same batches and waits for data
    under AFTER_MAX of the time (the starting loader: over BEFORE_MIN); raise Wrong otherwise."""
    starting_loader(slow_loader, "check_bottleneck(fix, slow_loader)")
    overran = f"the check took over {BOUND_S:g} s: does every __getitem__ return? {HINT}"
    with warnings.catch_warnings(), bounded(BOUND_S, overran):  # torch warns above the CPU count
        warnings.filterwarnings("ignore", message="This DataLoader will create")
        loader = as_loader(fix(slow_loader), "fix", HINT)
        expected = reference_batches(slow_loader)
        _, before = _timed(slow_loader, max_batches=3)
        if before < BEFORE_MIN:
            raise Wrong(
                f"the starting loader waited only {before:.0%} of the time: pass the lab's "
                f"slow_loader unchanged and put your fix in fix()."
            )
        if measure is not None:
            _agree(measure, slow_loader, before, "the starting loader")
        if loader.num_workers:  # bounded; forked where it can, so start-up is not what is judged
            fork = loader.multiprocessing_context is None and can_fork()
            loader = rebuild(
                loader,
                timeout=loader.timeout or 10.0,
                multiprocessing_context="fork" if fork else loader.multiprocessing_context,
            )
        batches, after = _timed(loader)
        biggest = max((batch_size_of(b) for b in batches), default=0)
        compare(
            batches,
            expected,
            sizes=True,
            prefix=True,
            count=f"your loader yields batches of {biggest} samples, the starting one of "
            f"{slow_loader.batch_size}: keep batch_size (a bigger batch only hides the "
            f"wait). {HINT}",
            differ=lambda k: (
                f"batch {k} differs from the starting loader's batch {k}: the fix must "
                f"keep every sample and the order (no shuffle), only make it faster. {HINT}"
            ),
        )
        if after > AFTER_MAX or after > before / 2:
            workers = loader.num_workers
            how = (
                "workers share the slow stage's cost between them, they do not remove it; find the stage "
                "that costs the time"
                if workers
                else "time each stage of __getitem__ and stop paying the slow one for every sample"
            )
            raise Wrong(
                f"{f'with {workers} workers ' if workers else ''}your loader still waits "
                f"{after:.0%} of the time for data (the starting one {before:.0%}): {how}. {HINT}"
            )
        if len(batches) < len(expected):
            raise Wrong(f"your loader stopped after {len(batches)} of {len(expected)} batches. {HINT}")
        if measure is not None:
            _agree(measure, loader, after, "your fixed loader")
    return (
        f"same {len(batches)} batches; waiting for data over {BEFORE_MIN:.0%} of the time before, under "
        f"{AFTER_MAX:.0%} after (each with a {STEP_S * 1000:.0f} ms step)"
        f"{'; your wait_share agrees on both' if measure is not None else ''}"
    )
