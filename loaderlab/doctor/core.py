"""``doctor(loader_or_factory)``: run the probes on copies of a DataLoader and return a Report."""

from __future__ import annotations

import os
import random
import time
import traceback
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, IterableDataset

from loaderlab._validate import require_positive, require_seconds
from loaderlab.doctor.findings import PROBES, SEVERITIES, Finding, finding
from loaderlab.doctor.probes import Doctor
from loaderlab.doctor.report import Report
from loaderlab.doctor.workers import QuietWorkers, copied
from loaderlab.env import progress as progress_bar
from loaderlab.loaders import rebuild
from loaderlab.messages import one_line


def describe(loader: DataLoader) -> str:
    """Return a one-line description of a loader: dataset class, batch size, workers, options."""
    try:
        size = f"{len(loader.dataset)} samples"
    except TypeError:
        size = "no __len__"
    parts = [type(loader.dataset).__name__, "stream" if isinstance(loader.dataset, IterableDataset) else size]
    bs = "custom" if type(loader.batch_sampler) not in (BatchSampler, type(None)) else loader.batch_size
    parts += [f"batch_size={bs}", f"num_workers={loader.num_workers}"]
    parts += [f"{k}=True" for k in ("persistent_workers", "drop_last") if getattr(loader, k)]
    return ", ".join(parts)


def working_copy(loader: DataLoader) -> tuple[DataLoader | None, str | None]:
    """Return a loader like ``loader`` over copies of its dataset, samplers and generator (pickled
    together: the samplers still point at the copied dataset), whose workers print no warning,
    or ``(None, why)``."""
    objects, problem = copied((loader.dataset, loader.sampler, loader.batch_sampler, loader.generator))
    if objects is None:
        return None, problem
    dataset, sampler, batch_sampler, generator = objects
    copies: dict[str, Any] = {"dataset": dataset, "generator": generator}
    if isinstance(dataset, IterableDataset):
        pass
    elif type(loader.batch_sampler) is BatchSampler:  # keep loader.sampler reachable, as in the user's loader
        copies.update(
            batch_sampler=None, sampler=sampler, batch_size=loader.batch_size, drop_last=loader.drop_last
        )
    elif loader.batch_sampler is not None:
        copies.update(batch_sampler=batch_sampler)
    else:
        copies.update(sampler=sampler)
    return rebuild(loader, worker_init_fn=QuietWorkers(loader.worker_init_fn), **copies), None


FORK_WITH_THREADS = r"This process \(pid=\d+\) is multi-threaded, use of fork\(\) may lead to deadlocks"


def doctor(
    loader_or_factory: DataLoader | Callable[[], DataLoader],
    *,
    time_budget_s: float = 15.0,
    max_batches: int = 32,
    workers: Iterable[int] | None = None,
    step_s: float = 0.0,
    between_epochs: Callable[[DataLoader, int], Any] | None = None,
    probes: Iterable[str] = PROBES,
    shm_bytes: int | None = None,
    progress: bool = False,
) -> Report:
    """Return a ``Report`` of the pitfalls measured on pickled copies of a DataLoader (or of the one
    a factory returns); the loader, its dataset, sampler and generators are never iterated or changed.

    ``time_budget_s`` bounds the whole probe, ``max_batches`` each timed pass; ``workers``: the
    ``num_workers`` values the speed probe compares with yours (default: one, chosen from the usable
    cores); ``step_s`` is your training step (slept per batch); ``between_epochs(loader, epoch)`` is
    what your loop does between epochs (called on a copy); ``shm_bytes``: /dev/shm's size where the
    loader will run (default: this machine's free /dev/shm); ``probes`` picks among ``PROBES``.
    Warnings raised meanwhile (torch's among them) become findings instead of being printed.
    """
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # Python 3.12+ warns when a process with threads forks (os.fork in Lib/os.py): the threads are
        # the doctor's own samplers' and the host's (a Jupyter kernel's), not the user's loader
        warnings.filterwarnings("ignore", message=FORK_WITH_THREADS, category=DeprecationWarning)
        loader = _loader_of(loader_or_factory)
        workers, chosen = _validated(
            time_budget_s, max_batches, shm_bytes, step_s, workers, between_epochs, probes
        )
        saved = torch.get_rng_state(), random.getstate(), np.random.get_state()
        names, raised = [p for p in PROBES if p in chosen], [(w, "any") for w in caught]
        statuses: dict[str, dict[str, Any]] = {}
        work, problem = working_copy(loader)
        doc = Doctor(
            loader,
            work,
            problem,
            time_budget_s,
            max_batches,
            workers,
            float(step_s),
            between_epochs,
            shm_bytes,
        )
        try:
            for name in progress_bar(names, desc="doctor", total=len(names)) if progress else names:
                why, mark, t0 = doc.why_not(name), len(caught), time.perf_counter()
                if why is not None:
                    statuses[name] = {"ran": False, "seconds": None, "why": why[1]}
                    continue
                try:
                    getattr(doc, name)()
                except Exception as exc:  # noqa: BLE001 - the user's loader failing is a finding
                    if own_failure(exc):  # the doctor's own limit: said as such, never as the user's problem
                        own = f"not run: this probe cannot handle this loader ({one_line(exc)})"
                        statuses[name] = {"ran": False, "seconds": None, "why": own}
                        continue
                    if not doc.locate(exc):  # its root cause already reported, or the sample found
                        doc.causes.append(one_line(exc))
                        doc.findings.append(finding("loader.raises", probe=name, error=one_line(exc)))
                statuses[name] = {"ran": True, "seconds": round(time.perf_counter() - t0, 3), "why": None}
                raised += [(w, name) for w in caught[mark:]]
        finally:
            torch.set_rng_state(saved[0])
            random.setstate(saved[1])
            np.random.set_state(saved[2])
    doc.findings += warning_findings(raised)
    order = {s: i for i, s in enumerate(reversed(SEVERITIES))}
    findings = sorted(doc.findings, key=lambda f: (order[f.severity], f.code))
    return Report(findings, doc.figures, statuses, time.perf_counter() - start, describe(loader))


DOCTOR_DIR = os.path.dirname(os.path.abspath(__file__))


def own_failure(exc: BaseException) -> bool:
    """Return True when ``exc`` was raised by the doctor's own code (the innermost frame is in
    loaderlab/doctor/), not by the user's dataset, sampler or collate_fn or by torch on their behalf."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return False
    path = os.path.abspath(frames[-1].filename)  # the catalogue's datasets are user code, shipped here
    return os.path.dirname(path) == DOCTOR_DIR and not os.path.basename(path).startswith("catalogue")


def _loader_of(loader_or_factory: DataLoader | Callable[[], DataLoader]) -> DataLoader:
    """Return the DataLoader given, or the one the factory returns (TypeError otherwise)."""
    factory = callable(loader_or_factory) and not isinstance(loader_or_factory, DataLoader)
    loader = loader_or_factory() if factory else loader_or_factory
    if not isinstance(loader, DataLoader):
        got = f"got {type(loader).__name__}"
        raise TypeError(
            f"loader_or_factory() must return a torch.utils.data.DataLoader, {got}"
            if factory
            else f"loader_or_factory must be a DataLoader or a callable returning one, {got}"
        )
    return loader


def _validated(
    time_budget_s: float,
    max_batches: int,
    shm_bytes: int | None,
    step_s: float,
    workers: Iterable[int] | None,
    between_epochs: Any,
    probes: Iterable[str],
) -> tuple[list[int] | None, list[str]]:
    """Return ``(workers, probes)`` as lists once every option is checked (ValueError/TypeError)."""
    require_positive(time_budget_s, "time_budget_s", integer=False)
    require_positive(max_batches, "max_batches")
    require_positive(shm_bytes, "shm_bytes", allow_none=True)
    require_seconds(step_s, "step_s")
    if workers is not None:
        workers = list(workers)
        if not workers or any(isinstance(w, bool) or not isinstance(w, int) or w < 0 for w in workers):
            raise ValueError(f"workers must list ints >= 0, got {workers!r}")
    if between_epochs is not None and not callable(between_epochs):
        got = type(between_epochs).__name__
        raise TypeError(f"between_epochs must be callable(loader, epoch), got {got}")
    chosen = [] if isinstance(probes, str) else list(probes)
    if isinstance(probes, str) or any(p not in PROBES for p in chosen):
        raise ValueError(f"probes must be a list drawn from {PROBES}, got {probes!r}")
    return workers, chosen


def warning_findings(raised: list[tuple[warnings.WarningMessage, str]]) -> list[Finding]:
    """Return one finding per place that warned while probing (category, file and line, as
    Python's own "default" filter counts them), with the first text and how often it came;
    torch's known warnings have codes of their own, one finding each."""
    first: dict[tuple[Any, ...], tuple[warnings.WarningMessage, str, str, str]] = {}
    count: dict[tuple[Any, ...], int] = {}
    for w, probe in raised:
        text = " ".join(str(w.message).split()).split(" (Triggered internally at")[0]
        text = text if len(text) <= 240 else text[:237] + "..."
        if "worker processes in total" in text:
            code, text = "torch.worker_count", ". ".join(text.split(". ")[:2]) + "."
        elif "Length of IterableDataset" in text:
            code = "torch.iterable_length"
        elif "'pin_memory' argument is set as true" in text:
            code = "torch.pin_memory"
        else:
            code = "loader.warning"
        key = (code,) if code != "loader.warning" else (code, w.category, w.filename, w.lineno)
        first.setdefault(key, (w, probe, code, text))
        count[key] = count.get(key, 0) + 1
    found = []
    for key, (w, probe, code, text) in first.items():
        where = "creating the loader" if probe == "any" else f"{probe} probe"
        found.append(
            finding(code, probe=probe, text=text, category=w.category.__name__, where=where, times=count[key])
        )
    return found
