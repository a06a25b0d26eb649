"""``doctor(loader_or_factory)``: run the probes on copies of a DataLoader and return a Report."""

from __future__ import annotations

import random
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, IterableDataset

from loaderlab._validate import require_positive, require_seconds
from loaderlab.checks.report import one_line
from loaderlab.doctor.findings import PROBES, SEVERITIES, finding
from loaderlab.doctor.probes import Doctor
from loaderlab.doctor.report import Report
from loaderlab.doctor.workers import copied
from loaderlab.env import progress as progress_bar
from loaderlab.loaders import rebuild

_WORKER_WARNING = "This DataLoader will create"  # torch's warning: more workers than cores


def _as_loader(loader_or_factory: Any) -> DataLoader:
    if isinstance(loader_or_factory, DataLoader):
        return loader_or_factory
    if not callable(loader_or_factory):
        raise TypeError("loader_or_factory must be a DataLoader or a callable returning one, "
                        f"got {type(loader_or_factory).__name__}")
    with warnings.catch_warnings():  # reported as speed.workers_over_cores instead
        warnings.filterwarnings("ignore", message=_WORKER_WARNING, category=UserWarning)
        made = loader_or_factory()
    if not isinstance(made, DataLoader):
        raise TypeError(f"loader_or_factory() must return a torch.utils.data.DataLoader, got {type(made).__name__}")
    return made


def describe(loader: DataLoader) -> str:
    """Return a one-line description of a loader: dataset class, batch size, workers, options."""
    parts = [type(loader.dataset).__name__, "stream" if isinstance(loader.dataset, IterableDataset)
             else f"{len(loader.dataset)} samples"]  # type: ignore[arg-type]
    bs = loader.batch_size if loader.batch_sampler is None or type(loader.batch_sampler) is BatchSampler else "custom"
    parts += [f"batch_size={bs}", f"num_workers={loader.num_workers}"]
    parts += [f"{k}=True" for k in ("persistent_workers", "drop_last") if getattr(loader, k)]
    return ", ".join(parts)


def working_copy(loader: DataLoader) -> tuple[DataLoader | None, str | None]:
    """Return a loader like ``loader`` over copies of its dataset, sampler, batch sampler and
    generator (pickled together, so the samplers still point at the copied dataset), or
    ``(None, why)`` when the dataset cannot be copied."""
    objects, problem = copied((loader.dataset, loader.sampler, loader.batch_sampler, loader.generator))
    if objects is None:
        return None, problem
    dataset, sampler, batch_sampler, generator = objects
    if isinstance(dataset, IterableDataset):
        return rebuild(loader, dataset=dataset, generator=generator), None
    if type(loader.batch_sampler) is BatchSampler:  # keep loader.sampler reachable, as in the user's loader
        return rebuild(loader, dataset=dataset, batch_sampler=None, sampler=sampler, generator=generator,
                       batch_size=loader.batch_size, drop_last=loader.drop_last), None
    if loader.batch_sampler is not None:
        return rebuild(loader, dataset=dataset, batch_sampler=batch_sampler, generator=generator), None
    return rebuild(loader, dataset=dataset, sampler=sampler, generator=generator), None


def _check_options(time_budget_s: Any, max_batches: Any, workers: list, step_s: Any, between_epochs: Any,
                   probes: Any, shm_bytes: Any) -> list[str]:
    require_positive(time_budget_s, "time_budget_s", integer=False)
    require_positive(max_batches, "max_batches")
    require_positive(shm_bytes, "shm_bytes", allow_none=True)
    require_seconds(step_s, "step_s")
    if not workers or any(isinstance(w, bool) or not isinstance(w, int) or w < 0 for w in workers):
        raise ValueError(f"workers must list ints >= 0, got {workers!r}")
    if between_epochs is not None and not callable(between_epochs):
        raise TypeError(f"between_epochs must be callable(loader, epoch), got {type(between_epochs).__name__}")
    chosen = [] if isinstance(probes, str) else list(probes)
    if isinstance(probes, str) or any(p not in PROBES for p in chosen):
        raise ValueError(f"probes must be a list drawn from {PROBES}, got {probes!r}")
    return chosen


def doctor(
    loader_or_factory: DataLoader | Callable[[], DataLoader],
    *,
    time_budget_s: float = 15.0,
    max_batches: int = 32,
    workers: Iterable[int] = (0, 2, 4),
    step_s: float = 0.0,
    between_epochs: Callable[[DataLoader, int], Any] | None = None,
    probes: Iterable[str] = PROBES,
    shm_bytes: int | None = None,
    progress: bool = False,
) -> Report:
    """Return a ``Report`` of the pitfalls measured on copies of a DataLoader.

    ``loader_or_factory`` is a DataLoader or a callable taking no argument that returns one.
    ``time_budget_s`` bounds the whole probe (a probe that cannot start in time is listed as
    not probed); ``max_batches`` bounds each timed pass; ``workers`` are the ``num_workers``
    values compared with yours; ``step_s`` is your training step's duration (the passes sleep
    that long per batch). ``between_epochs(loader, epoch)`` is what your loop does between
    epochs (e.g. ``loader.sampler.set_epoch(epoch)``); the epoch probes call it on a copy.
    ``shm_bytes``: /dev/shm's size where the loader will run (default: this machine's free
    /dev/shm). ``probes`` picks among ``PROBES``. The probes work on pickled copies: the loader,
    its dataset, sampler and generators are never iterated or changed.
    """
    start = time.perf_counter()
    loader = _as_loader(loader_or_factory)
    workers = list(workers)
    chosen = _check_options(time_budget_s, max_batches, workers, step_s, between_epochs, probes, shm_bytes)
    saved = torch.get_rng_state(), random.getstate(), np.random.get_state()
    ran, skipped = [], {}
    names = [p for p in PROBES if p in chosen]
    # torch warns when a loader asks for more workers than cores; the sweep does it on purpose,
    # and the user's own setting is reported as the finding speed.workers_over_cores
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_WORKER_WARNING, category=UserWarning)
        work, problem = working_copy(loader)
        doc = Doctor(loader, work, problem, time_budget_s, max_batches, workers, float(step_s),
                     between_epochs, shm_bytes)
        try:
            for name in progress_bar(names, desc="doctor", total=len(names)) if progress else names:
                why = doc.why_not(name)
                if why is not None:
                    if why[0] == "skipped":
                        skipped[name] = why[1]
                    continue
                try:
                    getattr(doc, name)()
                except Exception as exc:  # noqa: BLE001 - the user's loader failing is a finding
                    doc.findings.append(finding("loader.raises", probe=name, error=one_line(exc)))
                ran.append(name)
        finally:
            torch.set_rng_state(saved[0])
            random.setstate(saved[1])
            np.random.set_state(saved[2])
    order = {s: i for i, s in enumerate(reversed(SEVERITIES))}
    findings = sorted(doc.findings, key=lambda f: (order[f.severity], f.code))
    return Report(findings, doc.figures, ran, skipped, time.perf_counter() - start, describe(loader))
