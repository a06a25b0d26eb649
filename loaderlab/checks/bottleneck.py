"""Checker for lab 14: measure the data wait of a pipeline, then fix its slow stage.

``check_bottleneck(fix, slow_loader, measure=wait_share)``: ``slow_loader`` is the lab's
starting loader (``num_workers=0``; its dataset's every sample waits on a slow stage);
``fix(slow_loader)`` returns a loader that yields the same batches. The checker times the
wait inside ``next(loader)`` against a ``STEP_S`` training step (a sleep), the first
``max(1, num_workers)`` batches (start-up) left out, before and after: ✅ when the starting
loader waits over half the time and the fixed one under ``AFTER_MAX`` and under half the
starting share. Stages and step are sleeps, so the shares barely move when a core is busy;
workers are forked where fork exists (their start-up is not what is judged). The optional
``measure(loader, train_step) -> float`` (the student's own measurement) must agree with the
checker's within ``AGREE`` on both loaders.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

from torch.utils.data import DataLoader

from loaderlab.checks.report import Wrong, checker
from loaderlab.checks.speed import reference_batches
from loaderlab.env import can_fork
from loaderlab.loaders import batch_size_of, rebuild, same_batch, stop_workers

HINT = "Hint: notebook 14, section 1 'Data wait vs compute, per step'"
STEP_S = 0.04  # the lab's train_step
BEFORE_MIN, AFTER_MAX, AGREE = 0.5, 0.25, 0.15
LIMIT_S = 4.0  # a pass stops after this long: a loader that slow cannot pass


def _step(batch: Any) -> None:
    time.sleep(STEP_S)


def _timed(loader: DataLoader, max_batches: int | None = None) -> tuple[list[Any], float]:
    """Return (batches, wait share) of one pass, each worker's first batch left out."""
    batches, waits, steps = [], [], []
    iterator = iter(loader)
    start = t = time.perf_counter()
    try:
        for batch in iterator:
            got = time.perf_counter()
            batches.append(batch)
            waits.append(got - t)
            _step(batch)
            t = time.perf_counter()
            steps.append(t - got)
            if len(batches) == max_batches or t - start > LIMIT_S:
                break
    finally:
        stop_workers(iterator)
    skip = min(max(1, loader.num_workers), len(batches) // 2)
    wait, step = sum(waits[skip:]), sum(steps[skip:])
    return batches, wait / (wait + step) if wait + step else 1.0


def _agree(measure: Callable[..., Any], loader: DataLoader, share: float, which: str) -> None:
    theirs = measure(loader, _step)
    if isinstance(theirs, bool) or not isinstance(theirs, (int, float)) or abs(theirs - share) > AGREE:
        raise Wrong(f"your wait_share returned {theirs!r:.6} for {which}, the checker measured {share:.2f}: "
                    f"time the wait inside next(loader) apart from the step, leave the first batch out, "
                    f"and return wait / (wait + step), a fraction of 1. {HINT}")


@checker
def check_bottleneck(fix: Callable[[DataLoader], DataLoader], slow_loader: DataLoader,
                     measure: Callable[..., float] | None = None) -> str:
    """Return a confirmation if ``fix(slow_loader)`` yields the same batches and waits for data
    under AFTER_MAX of the time (the starting loader: over BEFORE_MIN); raise Wrong otherwise."""
    if not isinstance(slow_loader, DataLoader) or slow_loader.num_workers or slow_loader.batch_sampler is None:
        raise Wrong("slow_loader must be the lab's starting loader (a DataLoader with num_workers=0): "
                    "run the cell that builds it and pass it as the second argument.")
    with warnings.catch_warnings():  # torch warns above the CPU count; these workers sleep
        warnings.filterwarnings("ignore", message="This DataLoader will create")
        loader = fix(slow_loader)
        if not isinstance(loader, DataLoader):
            raise Wrong(f"fix must return a DataLoader, got {type(loader).__name__}. {HINT}")
        expected = reference_batches(slow_loader)
        _, before = _timed(slow_loader, max_batches=3)
        if before < BEFORE_MIN:
            raise Wrong(f"the starting loader waited only {before:.0%} of the time: pass the lab's slow_loader "
                        f"unchanged and put your fix in fix().")
        if measure is not None:
            _agree(measure, slow_loader, before, "the starting loader")
        if loader.num_workers:  # bounded; forked where it can, so start-up is not what is judged
            fork = {"multiprocessing_context": "fork"} if loader.multiprocessing_context is None and can_fork() else {}
            loader = rebuild(loader, timeout=loader.timeout or 10.0, **fork)
        batches, after = _timed(loader)
    sizes = [batch_size_of(b) for b in batches]
    if sizes != [batch_size_of(b) for b in expected][: len(sizes)]:
        raise Wrong(f"your loader yields batches of {max(sizes, default=0)} samples, the starting one of "
                    f"{slow_loader.batch_size}: keep batch_size (a bigger batch only hides the wait). {HINT}")
    differ = next((k for k, (a, b) in enumerate(zip(batches, expected, strict=False)) if not same_batch(a, b)), None)
    if differ is not None:
        raise Wrong(f"batch {differ} differs from the starting loader's batch {differ}: the fix must keep "
                    f"every sample and the order (no shuffle), only make it faster. {HINT}")
    if after > AFTER_MAX or after > before / 2:
        if loader.num_workers:
            raise Wrong(f"with {loader.num_workers} workers your loader still waits {after:.0%} of the time "
                        f"for data (the starting one {before:.0%}): workers share the slow stage's cost "
                        f"between them, they do not remove it; find the stage that costs the time. {HINT}")
        raise Wrong(f"your loader still waits {after:.0%} of the time for data (the starting one {before:.0%}): "
                    f"time each stage of __getitem__ and stop paying the slow one for every sample. {HINT}")
    if len(batches) < len(expected):
        raise Wrong(f"your loader stopped after {len(batches)} of {len(expected)} batches. {HINT}")
    agreed = ""
    if measure is not None:
        _agree(measure, loader, after, "your fixed loader")
        agreed = "; your wait_share agrees on both"
    return (f"same {len(batches)} batches; waiting for data over {BEFORE_MIN:.0%} of the time before, under "
            f"{AFTER_MAX:.0%} after (each with a {STEP_S * 1000:.0f} ms step){agreed}")
