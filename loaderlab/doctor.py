"""loaderlab doctor: probe a user's DataLoader for the pitfalls the course reproduces.

``doctor(loader_or_factory)`` returns a ``Report``: one ``Finding`` per measured problem, each
with a severity ("info", "warning", "error"), a code, a sentence with the figure behind it, a
one-line fix and the notebook section that reproduces the pitfall. The probes run on copies
of the loader (``loaderlab.loaders.rebuild``), never on the loader itself, stop at a time
budget, shut their workers down, and put the random generators they touched back as they were.

Command line: ``python -m loaderlab doctor my_module:make_loader``.
"""

from __future__ import annotations

import io
import math
import multiprocessing
import os
import pickle
import random
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, IterableDataset
from torch.utils.data.distributed import DistributedSampler

from loaderlab.checks.report import one_line
from loaderlab.doctor_probes import (
    Pass,
    ProbeDataset,
    ProbeIterable,
    equal_positions,
    identity,
    random_part,
    state_of,
    timed_pass,
)
from loaderlab.env import progress as progress_bar
from loaderlab.loaders import rebuild, require_positive, stop_workers
from loaderlab.measure import WorkerMemorySampler, live_workers

SEVERITIES = ("info", "warning", "error")
_WORKER_WARNING = "This DataLoader will create"  # torch's warning: more workers than cores
MB = 1024 * 1024

# code -> (notebook, heading of the section that reproduces the pitfall or shows its fix)
SECTIONS: dict[str, tuple[str, str]] = {
    "loader.raises": ("08_hangs_crashes_and_lifecycle.ipynb", "## 2. A worker that raises, a worker that is killed"),
    "pickle.fails": ("12_start_methods.ipynb", "## 3. What must be picklable"),
    "pickle.main_module": ("12_start_methods.ipynb", "## 3. What must be picklable"),
    "batch.last_size_1": (
        "02_batches_drop_last_and_samplers.ipynb",
        "## 4. Fix: `drop_last=True` for training, `drop_last=False` for validation",
    ),
    "iterable.duplicates": ("11_iterable_datasets.ipynb", "## 2. Shard the stream per worker"),
    "iterable.partial_batches": ("11_iterable_datasets.ipynb", "## 4. Each worker ends with its own partial batch"),
    "random.duplicate_across_workers": (
        "07_worker_seeds_and_reproducibility.ipynb",
        "## 4. Fixes: reseed in `worker_init_fn`, or build the generator in the worker",
    ),
    "random.repeats_across_epochs": (
        "07_worker_seeds_and_reproducibility.ipynb",
        '## 7. "Reset the generator every epoch" repeats every epoch',
    ),
    "persistent.stale_state": ("08_hangs_crashes_and_lifecycle.ipynb", "## 4. Persistent workers and stale dataset state"),
    "distributed.no_set_epoch": (
        "10_distributed_sampling.ipynb",
        "## 2. The same order every epoch — unless you call `set_epoch`",
    ),
    "memory.python_container": ("06_copy_on_write_memory.ipynb", "## 6. Fixes that keep the table shared"),
    "memory.worker_growth": ("06_copy_on_write_memory.ipynb", "## 2. Measure it: USS per worker, PSS in total"),
    "speed.more_workers": ("03_workers_prefetch_persistent_pin.ipynb", "## 2. How many workers? Two kinds of slow `__getitem__`"),
    "speed.workers_slower": ("04_custom_dataset_and_caching.ipynb", "## 4. Counter-case: in-memory data plus workers is slower"),
    "speed.workers_over_cores": ("03_workers_prefetch_persistent_pin.ipynb", "## 3. torch's own warning, and what extra workers cost"),
    "speed.batched_fetch": ("04_custom_dataset_and_caching.ipynb", "## 3. Fetching a whole batch at once: `__getitems__`"),
    "speed.caching": ("04_custom_dataset_and_caching.ipynb", "## 2. Caching decoded tensors in memory"),
}

PROBES = ("pickling", "iterable", "batches", "random", "persistent", "distributed", "containers", "speed")
MATERIAL_MS = 5.0  # a batch that costs less to make than this gains nothing from more workers


# code -> the probe that measures it (``doctor(..., probes=[probe_for(code)])`` runs only that one)
_PROBE_OF = {
    "pickle": "pickling", "batch": "batches", "iterable.duplicates": "iterable",
    "iterable.partial_batches": "batches", "random": "random", "persistent": "persistent",
    "distributed": "distributed", "memory.python_container": "containers", "memory": "speed", "speed": "speed",
}


def probe_for(code: str) -> str:
    """Return the name of the probe (one of ``PROBES``) that can report finding ``code``."""
    if code not in SECTIONS:
        raise ValueError(f"code must be one of {sorted(SECTIONS)}, got {code!r}")
    probe = _PROBE_OF.get(code) or _PROBE_OF.get(code.split(".")[0])
    if probe is None:
        raise ValueError(f"code {code!r} is not reported by one probe alone")
    return probe


def anchor(heading: str) -> str:
    """Return the Jupyter anchor of a markdown heading: its text without ``#``, backticks and
    ``*``, spaces replaced by ``-`` (what Jupyter and nbviewer link to)."""
    text = heading.lstrip("#").strip().replace("`", "").replace("*", "")
    return text.replace(" ", "-")


def section_link(code: str) -> str:
    """Return ``notebooks/NN_name.ipynb#anchor`` for a finding code."""
    notebook, heading = SECTIONS[code]
    return f"notebooks/{notebook}#{anchor(heading)}"


@dataclass
class Finding:
    """One measured problem (or fact): severity, code, message with its figure, fix, link."""

    severity: str
    code: str
    message: str
    fix: str
    figures: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")
        if self.code not in SECTIONS:
            raise ValueError(f"code {self.code!r} has no notebook section in SECTIONS")

    @property
    def link(self) -> str:
        return section_link(self.code)

    def __str__(self) -> str:
        return f"[{self.severity}] {self.code}: {self.message}\n    fix: {self.fix}\n    see: {self.link}"


@dataclass
class Report:
    """What ``doctor`` found: ``findings`` (worst first), figures per probe, probes run/skipped."""

    findings: list[Finding]
    figures: dict[str, dict[str, Any]]
    probes_run: list[str]
    probes_skipped: dict[str, str]
    wall_s: float
    describe: str

    def codes(self, min_severity: str = "info") -> list[str]:
        """Return the codes of findings at ``min_severity`` or above, sorted."""
        return sorted(f.code for f in self.at_least(min_severity))

    def at_least(self, severity: str) -> list[Finding]:
        """Return the findings whose severity is ``severity`` or worse."""
        if severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {severity!r}")
        rank = SEVERITIES.index(severity)
        return [f for f in self.findings if SEVERITIES.index(f.severity) >= rank]

    @property
    def worst(self) -> str | None:
        """Return the worst severity found, or None when there is no finding."""
        return self.findings[0].severity if self.findings else None

    def summary(self) -> str:
        """Return one stable line per finding (severity and code, no figures)."""
        if not self.findings:
            return "no findings"
        return "\n".join(f"{f.severity:7s} {f.code}" for f in self.findings)

    def __str__(self) -> str:
        counts = {s: sum(f.severity == s for f in self.findings) for s in SEVERITIES}
        lines = [
            f"loaderlab doctor: {self.describe}",
            f"probed in {self.wall_s:.1f} s; {counts['error']} error(s), {counts['warning']} warning(s), "
            f"{counts['info']} note(s)",
        ]
        lines += [str(f) for f in self.findings] or ["No problem found by the probes that ran."]
        if self.probes_skipped:
            lines.append("not probed: " + "; ".join(f"{k} ({v})" for k, v in self.probes_skipped.items()))
        return "\n".join(lines)

    __repr__ = __str__


# ---------------------------------------------------------------------------- helpers


class _Budget:
    def __init__(self, seconds: float) -> None:
        self.start = time.perf_counter()
        self.end = self.start + seconds

    def left(self) -> float:
        return self.end - time.perf_counter()


class _RandomState:
    """Snapshot of every generator a probe can advance; ``restore()`` puts them back."""

    def __init__(self, loader: DataLoader) -> None:
        self.torch = torch.get_rng_state()
        self.python = random.getstate()
        self.numpy = np.random.get_state()
        gens = [loader.generator]
        for sampler in (loader.sampler, getattr(loader.batch_sampler, "sampler", None)):
            gens.append(getattr(sampler, "generator", None))
        self.generators = [(g, g.get_state()) for g in gens if isinstance(g, torch.Generator)]
        self.epochs = [(s, s.epoch) for s in _samplers(loader) if isinstance(s, DistributedSampler)]

    def restore(self) -> None:
        torch.set_rng_state(self.torch)
        random.setstate(self.python)
        np.random.set_state(self.numpy)
        for g, state in self.generators:
            g.set_state(state)
        for s, epoch in self.epochs:
            s.epoch = epoch


def _samplers(loader: DataLoader) -> list[Any]:
    found = [loader.sampler, loader.batch_sampler, getattr(loader.batch_sampler, "sampler", None)]
    return [s for s in found if s is not None]


def _start_method(loader: DataLoader) -> str:
    ctx = loader.multiprocessing_context
    if ctx is None:
        return multiprocessing.get_start_method(allow_none=False)
    return ctx if isinstance(ctx, str) else ctx.get_start_method()


def _name(obj: Any) -> str:
    return getattr(obj, "__qualname__", None) or type(obj).__qualname__


class _MainModuleFinder(pickle.Pickler):
    """A pickler that notes every class or function defined in ``__main__`` it meets."""

    def __init__(self, file: Any) -> None:
        super().__init__(file, protocol=pickle.DEFAULT_PROTOCOL)
        self.in_main: set[str] = set()

    def persistent_id(self, obj: Any) -> None:
        kind = obj if isinstance(obj, type) or callable(obj) and hasattr(obj, "__module__") else type(obj)
        if getattr(kind, "__module__", None) == "__main__":
            self.in_main.add(_name(kind))
        return None


class _Counter(io.RawIOBase):
    def __init__(self) -> None:
        self.n = 0

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        size = memoryview(b).nbytes
        self.n += size
        return size


def _probe_loader(loader: DataLoader, dataset: Dataset, indices: Sequence[int] | None, **overrides: Any) -> DataLoader:
    """Return a copy of ``loader`` over a probe wrapper, one item per "batch" (no collation)."""
    kwargs: dict[str, Any] = dict(dataset=dataset, batch_size=None, batch_sampler=None, collate_fn=identity)
    if indices is not None:
        kwargs["sampler"] = list(indices)
    else:
        kwargs["sampler"] = None
        kwargs["drop_last"] = False
    kwargs.update(overrides)
    return rebuild(loader, **kwargs)


# ----------------------------------------------------------------------------- probes


class _Doctor:
    def __init__(
        self,
        loader: DataLoader,
        budget: _Budget,
        max_batches: int,
        workers: Sequence[int],
        step_s: float,
        between_epochs: Callable[[DataLoader, int], Any] | None,
    ) -> None:
        self.loader = loader
        self.budget = budget
        self.max_batches = max_batches
        self.workers = workers
        self.step_s = step_s
        self.between_epochs = between_epochs
        self.findings: list[Finding] = []
        self.figures: dict[str, dict[str, Any]] = {}
        self.dataset = loader.dataset
        self.iterable = isinstance(self.dataset, IterableDataset)
        self.method = _start_method(loader)
        self.workers_ok = True  # False once pickling fails under spawn/forkserver
        self.stream_duplicates = False
        self.startup_s = 0.0  # longest wait seen for a first item from new workers
        self.memory_workers = 0  # num_workers of the speed pass whose workers' memory was sampled

    def started(self, seconds: float) -> None:
        """Note how long new workers took to deliver their first item (start-up included)."""
        self.startup_s = max(self.startup_s, seconds)

    def can_start_workers(self) -> bool:
        """Return True if the budget left covers one more worker start-up as slow as the slowest seen."""
        return self.budget.left() > self.startup_s

    def add(self, severity: str, code: str, message: str, fix: str, **figures: Any) -> None:
        self.findings.append(Finding(severity, code, message, fix, figures))

    def applies(self, probe: str) -> bool:
        """Return False for a probe that has nothing to look at in this loader."""
        if probe == "iterable":
            return self.iterable
        if probe == "random":
            return not self.iterable
        if probe == "persistent":
            return self.loader.persistent_workers and self.loader.num_workers > 0 and not self.iterable
        return True

    def _len(self) -> int | None:
        try:
            return len(self.dataset)  # type: ignore[arg-type]
        except TypeError:
            return None

    def _epoch_hook(self, loader: DataLoader, epoch: int) -> None:
        if self.between_epochs is not None:
            self.between_epochs(loader, epoch)

    # -- pickling ---------------------------------------------------------------------
    def pickling(self) -> None:
        parts = {"dataset": self.dataset, "collate_fn": self.loader.collate_fn, "worker_init_fn": self.loader.worker_init_fn}
        sizes, failed, in_main = {}, {}, set()
        for name, obj in parts.items():
            if obj is None:
                continue
            sink = _Counter()
            finder = _MainModuleFinder(sink)
            try:
                finder.dump(obj)
                sizes[name] = sink.n
            except Exception as exc:  # noqa: BLE001 - any pickling error is the finding
                failed[name] = one_line(exc)
            in_main |= finder.in_main
        self.figures["pickling"] = {"pickled_mb": round(sizes.get("dataset", 0) / MB, 3), "failed": sorted(failed)}
        uses_workers = self.loader.num_workers > 0
        fresh = self.method in ("spawn", "forkserver")
        if failed:
            what = ", ".join(f"{k} ({v})" for k, v in failed.items())
            if fresh and uses_workers:
                self.workers_ok = False
                severity, when = "error", f"this loader starts its workers with {self.method}, so iter(loader) fails"
            else:
                severity, when = "warning", "workers started with spawn (macOS, Windows) or forkserver will fail"
            self.add(
                severity, "pickle.fails", f"{what} cannot be pickled: {when}.",
                "Define datasets, collate_fn and worker_init_fn at module level in an importable file (no lambdas, "
                "no locks or open clients as attributes).",
                failed=sorted(failed),
            )
        if in_main:
            self.add(
                "warning", "pickle.main_module",
                f"{', '.join(sorted(in_main))} defined in __main__: spawn workers started from a notebook or "
                "an interactive session cannot import it.",
                "Move these classes and functions into a module and import them.",
                names=sorted(in_main),
            )
        if fresh and uses_workers and sizes.get("dataset", 0) > 64 * MB:
            self.figures["pickling"]["note"] = "every spawn worker receives the full pickled dataset"

    # -- batch sizes ------------------------------------------------------------------
    def batches(self) -> None:
        loader = self.loader
        if self.iterable:
            return self._stream_batches()
        bs = loader.batch_sampler
        if bs is None:
            return
        if type(bs) is BatchSampler:
            n, size = len(bs.sampler), bs.batch_size  # type: ignore[arg-type]
            last = n % size
            sizes_1 = 1 if (last == 1 and not bs.drop_last and size > 1) else 0
            total = len(bs)
        else:
            sizes = []
            for batch in bs:
                sizes.append(len(batch))
                if len(sizes) >= 100_000:
                    break
            sizes_1 = sum(1 for s in sizes if s == 1) if max(sizes, default=0) > 1 else 0
            total, n, size = len(sizes), sum(sizes), max(sizes, default=0)
        self.figures["batches"] = {"batches": total, "samples": n, "batch_size": size, "batches_of_1": sizes_1}
        if sizes_1:
            self.add(
                "warning", "batch.last_size_1",
                f"{n} samples in batches of {size} leave {sizes_1} batch of 1 sample per epoch: BatchNorm raises "
                "'Expected more than 1 value per channel when training' on it.",
                "Pass drop_last=True to the training loader (keep drop_last=False for validation).",
                samples=n, batch_size=size,
            )

    def _stream_batches(self) -> None:
        loader = self.loader
        if loader.batch_size is None or loader.drop_last or not self.workers_ok:
            return
        copy = rebuild(loader, persistent_workers=False)
        result = timed_pass(copy, self.max_batches * 4, max(1.0, self.budget.left() / 4))
        if loader.num_workers and result.waits_s:
            self.started(result.waits_s[0])
        if not result.finished:
            self.figures["batches"] = {"epoch_seen": False, "batches": result.batches}
            return
        partial = [s for s in result.sizes if s < loader.batch_size]
        self.figures["batches"] = {"epoch_seen": True, "batches": result.batches, "partial": len(partial)}
        if len(partial) > 1:
            self.add(
                "warning", "iterable.partial_batches",
                f"one epoch gave {len(partial)} partial batches (sizes {sorted(partial)}) instead of at most 1: "
                f"each of the {loader.num_workers} workers batches its own items and ends with its own remainder.",
                "Use drop_last=True, or give each worker a multiple of batch_size items, or batch in one place.",
                partial=sorted(partial),
            )
        if 1 in partial and loader.batch_size > 1:
            self.add(
                "warning", "batch.last_size_1",
                "one epoch ends with a batch of 1 sample: BatchNorm raises on it while training.",
                "Pass drop_last=True to the training loader.",
            )

    # -- iterable duplicates ------------------------------------------------------------
    def iterable_probe(self) -> None:
        if not self.iterable or not self.workers_ok:
            return
        per_worker = 16
        probe = _probe_loader(self.loader, ProbeIterable(self.dataset), None, num_workers=2, persistent_workers=False)
        seen: dict[int, list[str]] = {0: [], 1: []}
        share = max(1.0, self.budget.left() / 4)
        deadline = math.inf  # counted from the first item: worker start-up is not the stream's fault
        t0 = time.perf_counter()
        iterator = iter(probe)
        try:
            while min(len(v) for v in seen.values()) < per_worker and time.perf_counter() < deadline:
                try:
                    worker, fp = next(iterator)
                except StopIteration:
                    break
                if deadline == math.inf:
                    self.started(time.perf_counter() - t0)
                    deadline = time.perf_counter() + share
                seen.setdefault(worker, []).append(fp)
        finally:
            stop_workers(iterator)
            del iterator
        a, b = seen[0], seen[1]
        m = min(len(a), len(b))
        same = sum(x == y for x, y in zip(a[:m], b[:m], strict=True))
        varied = len(set(a[:m])) > 1
        self.figures["iterable"] = {"compared": m, "same_position": same}
        if m >= 2 and varied and same == m:
            self.stream_duplicates = True
            self.add(
                "error", "iterable.duplicates",
                f"with 2 workers, each worker yielded the same stream: the first {m} items of worker 0 and worker 1 "
                f"are identical ({same}/{m}), so every item arrives once per worker.",
                "Shard the stream in __iter__ with torch.utils.data.get_worker_info() (id, num_workers).",
                compared=m, same=same,
            )

    # -- random draws -------------------------------------------------------------------
    def random_probe(self) -> None:
        n = self._len()
        if self.iterable or not n or not self.workers_ok:
            return
        k = min(12, n)
        indices = sorted({(j * n) // k for j in range(k)})
        masks = {}
        for i in indices:
            mask = random_part(self.dataset[i], self.dataset[i])
            if mask is not None and any(m.any() if isinstance(m, np.ndarray) else m for m in mask):
                masks[i] = mask
        self.figures["random"] = {"indices": len(indices), "random_in_main": len(masks)}
        if len(masks) * 2 < len(indices):
            return  # the samples are (mostly) deterministic: nothing to compare
        doubled = [i for i in masks for _ in range(2)]
        nw = max(2, self.loader.num_workers)
        wrapped = ProbeDataset(self.dataset, whole=True)
        # in_order: the indices go to the workers in turn, so worker 0 fetches doubled[::nw]
        loaders = [
            _probe_loader(self.loader, wrapped, doubled, num_workers=nw, persistent_workers=False, in_order=True)
        ]
        # Epoch 2 needs fresh workers (a fresh start is what can repeat), but only one: worker 0
        # fetching what it fetched in epoch 1, in the same order, draws the same values exactly
        # when every epoch's workers start from the same generator state. Persistent workers
        # continue their generators: no second epoch to compare. Without a between_epochs hook
        # nothing changes between the epochs, so epoch 2's worker starts beside epoch 1's.
        if not self.loader.persistent_workers:
            loaders.append(_probe_loader(self.loader, wrapped, doubled[::nw], num_workers=1, persistent_workers=False))
        together = self.between_epochs is None
        epochs: list[dict[tuple[int, int], Any]] = []
        iterators: dict[int, Any] = {}
        try:
            t0 = time.perf_counter()
            if together:
                iterators = {epoch: iter(probe) for epoch, probe in enumerate(loaders)}
            for epoch, probe in enumerate(loaders):
                if not together:
                    if epoch and not self.can_start_workers():
                        break
                    t0 = time.perf_counter()
                    iterators[epoch] = iter(probe)
                got = {}
                for index, worker, sample, _ in iterators[epoch]:
                    if not got and not (together and epoch):  # epoch 2's worker started long ago
                        self.started(time.perf_counter() - t0)
                    got[(index, worker)] = sample
                stop_workers(iterators.pop(epoch))
                epochs.append(got)
                self._epoch_hook(probe, epoch + 1)
        finally:
            for iterator in iterators.values():
                stop_workers(iterator)
            iterators.clear()
        first = epochs[0]
        by_index: dict[int, list[Any]] = {}
        for (index, _worker), sample in first.items():
            by_index.setdefault(index, []).append(sample)
        across = [equal_positions(masks[i], *v[:2]) for i, v in by_index.items() if len(v) >= 2]
        dup, pairs = _common(across)
        self.figures["random"].update(index_pairs=pairs, values_repeated_across_workers=dup)
        if pairs >= 3 and dup:
            self.add(
                "error", "random.duplicate_across_workers",
                f"the dataset's samples are random ({len(masks)}/{len(indices)} differ when fetched twice in one "
                f"process) but the same index fetched in 2 different workers drew the same random value(s) "
                f"({dup} per sample) in {pairs}/{pairs} pairs: every worker draws from a copy of the same generator.",
                "Give each worker its own generator seeded from get_worker_info().seed: a worker_init_fn doing "
                "info = get_worker_info(); info.dataset.rng = np.random.default_rng(info.seed), or a Dataset "
                "that keeps the seed and builds its generator in the worker.",
                pairs=pairs, values=dup,
            )
        if len(epochs) == 2:
            common = [key for key in first if key in epochs[1]]
            across = [equal_positions(masks[key[0]], first[key], epochs[1][key]) for key in common]
            dup, compared = _common(across)
            self.figures["random"].update(compared_across_epochs=compared, values_repeated_across_epochs=dup)
            if compared >= 3 and dup:
                self.add(
                    "warning", "random.repeats_across_epochs",
                    f"epoch 2 drew the same random value(s) as epoch 1 ({dup} per sample) in {compared}/{compared} "
                    "fetches: each epoch's workers start from the same generator state.",
                    "Seed from get_worker_info().seed (new every epoch), not from a fixed number or worker_id.",
                    compared=compared, values=dup,
                )

    # -- persistent workers and stale state -------------------------------------------
    def persistent(self) -> None:
        loader = self.loader
        n = self._len()
        if not (loader.persistent_workers and loader.num_workers > 0) or self.iterable or not n or not self.workers_ok:
            return
        hook = self.between_epochs
        setter = None
        if hook is None:
            if callable(getattr(self.dataset, "set_epoch", None)):
                setter = "set_epoch"
            elif isinstance(getattr(self.dataset, "epoch", None), int):
                setter = "epoch"
            else:
                self.figures["persistent"] = {"checked": False}
                return
        saved = dict(getattr(self.dataset, "__dict__", {}))
        indices = list(range(min(n, 2 * loader.num_workers)))
        probe = _probe_loader(loader, ProbeDataset(self.dataset, with_state=True), indices)
        try:
            t0 = time.perf_counter()
            list(probe)  # epoch 1: the workers start with the dataset as it is now
            self.started(time.perf_counter() - t0)
            before = state_of(self.dataset)
            if hook is not None:
                hook(probe, 1)
            elif setter == "set_epoch":
                self.dataset.set_epoch(1)  # type: ignore[attr-defined]
            else:
                self.dataset.epoch = 1  # type: ignore[attr-defined]
            main_state = state_of(self.dataset)
            changed = sorted(k for k in main_state if main_state[k] != before.get(k))
            rows = list(probe)  # epoch 2: the same workers
        finally:
            it = probe._iterator
            if it is not None:
                stop_workers(it)
                probe._iterator = None
            self.dataset.__dict__.update(saved)
        stale = sorted({k for *_, state in rows for k in changed if state and state.get(k) != main_state[k]})
        self.figures["persistent"] = {"checked": True, "changed_in_main": changed, "stale_in_workers": stale}
        if stale:
            self.add(
                "error", "persistent.stale_state",
                f"after the epoch change, the main process's dataset has new {', '.join(stale)} but the "
                f"persistent workers still read the old value(s) in {len(rows)}/{len(rows)} fetches.",
                "Send per-epoch values with the index (a sampler yielding (index, epoch)) or keep them in a "
                "shared-memory tensor; or drop persistent_workers.",
                stale=stale,
            )

    # -- distributed ------------------------------------------------------------------
    def distributed(self) -> None:
        sampler = next((s for s in _samplers(self.loader) if isinstance(s, DistributedSampler)), None)
        if sampler is None:
            return
        orders = []
        for epoch in range(2):
            orders.append(list(iter(sampler)))
            self._epoch_hook(self.loader, epoch + 1)
        same = orders[0] == orders[1]
        self.figures["distributed"] = {"shuffle": sampler.shuffle, "same_order": same, "indices": len(orders[0])}
        if sampler.shuffle and same and len(orders[0]) > 1:
            self.add(
                "warning", "distributed.no_set_epoch",
                f"two epochs of the DistributedSampler gave the same {len(orders[0])} indices in the same order: "
                "without set_epoch every epoch repeats the first shuffle.",
                "Call loader.sampler.set_epoch(epoch) at the start of every epoch.",
                indices=len(orders[0]),
            )

    # -- memory containers --------------------------------------------------------------
    def containers(self) -> None:
        found = {}
        datasets = [("dataset", self.dataset)]
        inner = getattr(self.dataset, "dataset", None)
        if isinstance(inner, Dataset):
            datasets.append(("dataset.dataset", inner))
        for prefix, ds in datasets:
            for name, value in getattr(ds, "__dict__", {}).items():
                mb = _container_mb(value)
                if mb is not None:
                    found[f"{prefix}.{name}"] = (len(value), mb)
        self.figures["containers"] = {k: {"items": n, "mb": round(mb, 1)} for k, (n, mb) in found.items()}
        for name, (n, mb) in found.items():
            severity = "warning" if self.loader.num_workers > 0 else "info"
            self.add(
                severity, "memory.python_container",
                f"{name} is a Python container of {n:,} objects (~{mb:.0f} MB): with fork, each worker's reads write "
                "their reference counts and copy the pages; with spawn, each worker unpickles a full copy.",
                "Store it as one NumPy array / tensor (strings: one byte buffer + offsets, loaderlab.cow.pack_rows).",
                items=n, mb=round(mb, 1),
            )

    # -- speed and worker memory --------------------------------------------------------
    def speed(self) -> None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        if self.loader.num_workers > cores:
            self.add(
                "info", "speed.workers_over_cores",
                f"num_workers={self.loader.num_workers} on {cores} usable CPU cores: torch warns about it; extra "
                "workers help only while samples wait (on disk, network), not while they compute.",
                "Keep it if the sweep below shows a gain; otherwise use at most one worker per core.",
                workers=self.loader.num_workers, cores=cores,
            )
        if not self.workers_ok:
            return
        user = self.loader.num_workers
        counts = list(dict.fromkeys([user, *self.workers]))
        if self.stream_duplicates:
            counts = [user]
        # 0 workers first: it starts no worker, and what a batch costs then decides which other
        # counts are worth a start (_worth_a_pass)
        if 0 in counts:
            counts = [0, *(w for w in counts if w)]
        passes: dict[int, Pass] = {}
        growth: dict[int, float] = {}
        i = 0
        while i < len(counts):
            w = counts[i]
            share = self.budget.left() / (len(counts) - i)
            if passes and w != user and (share < 0.5 or (w > 0 and not self.can_start_workers())):
                break  # your own setting is always measured
            copy = rebuild(self.loader, num_workers=w, persistent_workers=False)
            self._timed(copy, w, share, passes, growth, planned=counts)
            if w and passes[w].waits_s:
                self.started(passes[w].waits_s[0])
            if w == 0:
                counts = self._worth_a_pass(counts, passes[0])
            i += 1
        self._speed_findings(passes, growth, user)
        self._fetch_costs()

    def _worth_a_pass(self, counts: list[int], zero: Pass) -> list[int]:
        """Return the worker counts still worth a pass once 0 workers measured what a batch costs.

        More workers than yours can only find ``speed.more_workers``, which needs batches costing
        at least ``MATERIAL_MS`` to make: below that they are not started (each start costs
        seconds under spawn). One pass with 2+ workers stays, for the workers' memory.
        """
        user = self.loader.num_workers
        rate = zero.steady_samples_per_s
        if rate is None or 1000 * (sum(zero.sizes) / len(zero.sizes)) / rate >= MATERIAL_MS:
            return counts
        kept = [w for w in counts if w <= user]
        if not any(w >= 2 for w in kept):
            kept += [w for w in counts if w >= 2][:1]
        return kept

    def _timed(
        self, copy: DataLoader, w: int, share: float, passes: dict[int, Pass], growth: dict[int, float],
        planned: list[int],
    ) -> None:
        """Time one pass; one pass with 2+ workers also samples the workers' memory (not the pass
        with your settings when another is planned: the sampler's thread takes CPU from the timing)."""
        user = self.loader.num_workers
        others = [c for c in planned if c >= 2 and c != user]
        sample_here = w >= 2 and not growth and (w != user or not others)
        if sample_here:
            before = {p.pid for p in live_workers()}
            marks: list[int] = []

            def read_memory(count: int) -> None:
                if count == w:  # every worker has delivered a batch: start-up is behind them
                    marks.append(len(sampler.records))
                if count >= w and (count - w) % 8 == 0:
                    sampler.sample()

            with WorkerMemorySampler(interval_s=0.1) as sampler:
                passes[w] = timed_pass(copy, self.max_batches, share, self.step_s, on_batch=read_memory)
            self.memory_workers = w
            growth.update(_growth_after_start(sampler, before, marks[0] if marks else None))
        else:
            passes[w] = timed_pass(copy, self.max_batches, share, self.step_s)

    def _speed_findings(self, passes: dict[int, Pass], growth: dict[int, float], user: int) -> None:
        rates = {w: p.steady_samples_per_s for w, p in passes.items()}
        self.figures["speed"] = {
            "samples_per_s": {w: (round(r, 1) if r else None) for w, r in rates.items()},
            "batches": {w: p.batches for w, p in passes.items()},
            "first_batch_s": {w: round(p.waits_s[0], 3) if p.waits_s else None for w, p in passes.items()},
            "wait_per_batch_ms": {
                w: round(1000 * sum(p.waits_s) / p.batches, 2) if p.batches else None for w, p in passes.items()
            },
        }
        if growth:
            self.figures["memory"] = {"worker_uss_growth_mb": {str(k): round(v, 1) for k, v in growth.items()}}
            worst = max(growth.values())
            if worst >= 32:
                self.add(
                    "warning", "memory.worker_growth",
                    f"a worker's private memory (USS) grew by {worst:.0f} MB while it fetched "
                    f"{passes[self.memory_workers].batches} batches, without being asked to store anything.",
                    "Look for Python lists/dicts read by __getitem__ (copy-on-write) or caches filled in workers.",
                    mb=round(worst, 1),
                )
        mine = rates.get(user)
        if mine:
            best_w, best = max(((w, r) for w, r in rates.items() if r), key=lambda x: x[1])
            self.figures["speed"]["speedup_best"] = round(best / mine, 2)
            sizes = passes[user].sizes
            batch_ms = 1000 * (sum(sizes) / len(sizes)) / mine  # steady time per batch, your settings
            self.figures["speed"]["steady_batch_ms"] = round(batch_ms, 2)
            zero = passes.get(0)
            cost = zero.steady_samples_per_s if zero is not None else None
            intrinsic_ms = 1000 * (sum(sizes) / len(sizes)) / cost if cost else batch_ms
            self.figures["speed"]["batch_cost_ms"] = round(intrinsic_ms, 2)
            material = batch_ms >= 5.0 and intrinsic_ms >= 5.0  # making a batch costs something
            if best_w != user and best >= 1.5 * mine and (material or best_w < user):
                if best_w > user:
                    self.add(
                        "warning", "speed.more_workers",
                        f"num_workers={best_w} delivered {best:.0f} samples/s against {mine:.0f} with your "
                        f"num_workers={user} ({best / mine:.1f}x), once started.",
                        f"Try num_workers={best_w} (and measure again with your training step).",
                        speedup=round(best / mine, 2), best=best_w,
                    )
                else:
                    self.add(
                        "info", "speed.workers_slower",
                        f"num_workers={best_w} delivered {best:.0f} samples/s against {mine:.0f} with your "
                        f"num_workers={user}: each batch costs less to make than to send between processes.",
                        "For data already in memory use num_workers=0 and fetch whole batches (__getitems__).",
                        speedup=round(best / mine, 2), best=best_w,
                    )

    def _fetch_costs(self) -> None:
        n = self._len()
        bs = self.loader.batch_size
        if self.iterable or not n or self.budget.left() <= 0:
            return
        indices = [(j * n) // min(n, 16) for j in range(min(n, 16))]
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for i in indices:
            self.dataset[i]
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        per_item_ms = 1000 * wall / len(indices)
        cpu_share = cpu / wall if wall > 0 else 0.0
        self.figures["fetch"] = {"per_item_ms": round(per_item_ms, 3), "cpu_share": round(cpu_share, 2)}
        has_getitems = callable(getattr(self.dataset, "__getitems__", None))
        if bs and bs >= 16 and per_item_ms < 0.2 and not has_getitems:
            self.add(
                "info", "speed.batched_fetch",
                f"each sample takes {per_item_ms * 1000:.0f} µs and a batch calls __getitem__ {bs} times: "
                "for in-memory data the per-call overhead is most of the cost.",
                "Add __getitems__(indices) returning the whole batch with one indexing operation.",
                per_item_ms=round(per_item_ms, 4),
            )
        if per_item_ms >= 2.0 and cpu_share >= 0.7 and not hasattr(self.dataset, "cache"):
            self.add(
                "info", "speed.caching",
                f"each sample costs {per_item_ms:.1f} ms of CPU ({cpu_share:.0%} of its wall time): "
                "decoding again every epoch.",
                "If the decoded samples fit in memory, cache them once (in the main process, before the workers start).",
                per_item_ms=round(per_item_ms, 2),
            )


def _common(position_sets: list[set[int] | None]) -> tuple[int, int]:
    """Return (how many random positions were equal in every compared pair, pairs compared)."""
    sets = [p for p in position_sets if p is not None]
    if not sets:
        return 0, 0
    return len(set.intersection(*sets)), len(sets)


def _container_mb(value: Any) -> float | None:
    """Return the estimated size (MB) of a large Python container, or None if it is not one."""
    if isinstance(value, np.ndarray):
        if value.dtype != object or value.size < 10_000:
            return None
        items = value.reshape(-1)
    elif isinstance(value, (list, tuple, dict, set)):
        if len(value) < 10_000:
            return None
        items = value
    else:
        return None
    size = len(items)
    step = max(1, size // 64)
    if isinstance(items, dict):
        keys = list(items)[::step][:64]
        each = [sys.getsizeof(k) + sys.getsizeof(items[k]) for k in keys]
    elif isinstance(items, set):
        each = [sys.getsizeof(x) for x, _ in zip(items, range(64), strict=False)]
    else:
        each = [sys.getsizeof(items[i]) for i in range(0, size, step)][:64]
    mb = (sys.getsizeof(value) + size * (sum(each) / len(each))) / MB
    return mb if mb >= 4 else None


def _growth_after_start(
    sampler: WorkerMemorySampler, before: set[int], start: int | None
) -> dict[int, float]:
    """Return each new worker's USS growth (MB): its peak minus its first reading taken from
    record ``start`` on (once every worker had delivered a batch); {} without 2 readings."""
    if start is None:
        return {}
    readings: dict[int, list[float]] = {}
    for r in sampler.records[start:]:
        if r.role == "worker" and r.pid not in before:
            readings.setdefault(r.pid, []).append(r.uss_mb)
    return {pid: max(v) - v[0] for pid, v in readings.items() if len(v) >= 2}


# ------------------------------------------------------------------------------ entry


def _as_loader(loader_or_factory: Any) -> DataLoader:
    if isinstance(loader_or_factory, DataLoader):
        return loader_or_factory
    if not callable(loader_or_factory):
        raise TypeError(
            "loader_or_factory must be a DataLoader or a callable returning one, "
            f"got {type(loader_or_factory).__name__}"
        )
    with warnings.catch_warnings():  # reported as speed.workers_over_cores instead
        warnings.filterwarnings("ignore", message=_WORKER_WARNING, category=UserWarning)
        made = loader_or_factory()
    if not isinstance(made, DataLoader):
        raise TypeError(
            f"loader_or_factory() must return a torch.utils.data.DataLoader, got {type(made).__name__}"
        )
    return made


def describe(loader: DataLoader) -> str:
    """Return a one-line description of a loader: dataset class, batch size, workers, options."""
    parts = [type(loader.dataset).__name__]
    try:
        parts.append(f"{len(loader.dataset)} samples")  # type: ignore[arg-type]
    except TypeError:
        parts.append("stream")
    bs = loader.batch_size if loader.batch_sampler is None or type(loader.batch_sampler) is BatchSampler else "custom"
    parts.append(f"batch_size={bs}")
    parts.append(f"num_workers={loader.num_workers}")
    if loader.persistent_workers:
        parts.append("persistent_workers=True")
    if loader.drop_last:
        parts.append("drop_last=True")
    return ", ".join(parts)


def doctor(
    loader_or_factory: DataLoader | Callable[[], DataLoader],
    *,
    time_budget_s: float = 15.0,
    max_batches: int = 32,
    workers: Iterable[int] = (0, 2, 4),
    step_s: float = 0.0,
    between_epochs: Callable[[DataLoader, int], Any] | None = None,
    probes: Iterable[str] = PROBES,
    progress: bool = False,
) -> Report:
    """Return a ``Report`` of the pitfalls measured on copies of a DataLoader.

    ``loader_or_factory`` is a DataLoader or a callable taking no argument that returns one.
    ``time_budget_s`` bounds the whole probe (a probe that cannot start in time is listed as
    not probed); ``max_batches`` bounds each timed pass; ``workers`` are the ``num_workers``
    values compared with yours; ``step_s`` is your training step's duration (the passes sleep
    that long per batch). ``between_epochs(loader, epoch)`` is what your loop does between
    epochs (e.g. ``loader.sampler.set_epoch(epoch)``); the epoch probes call it. ``probes``
    picks among ``PROBES``. The loader itself is never iterated.
    """
    start = time.perf_counter()
    loader = _as_loader(loader_or_factory)
    require_positive(time_budget_s, "time_budget_s", integer=False)
    require_positive(max_batches, "max_batches")
    if isinstance(step_s, bool) or not isinstance(step_s, (int, float)) or step_s < 0:
        raise ValueError(f"step_s must be a number of seconds >= 0, got {step_s!r}")
    workers = list(workers)
    if not workers or any(isinstance(w, bool) or not isinstance(w, int) or w < 0 for w in workers):
        raise ValueError(f"workers must list ints >= 0, got {workers!r}")
    if between_epochs is not None and not callable(between_epochs):
        raise TypeError(f"between_epochs must be callable(loader, epoch), got {type(between_epochs).__name__}")
    chosen = list(probes)
    unknown = [p for p in chosen if p not in PROBES]
    if isinstance(probes, str) or unknown:
        raise ValueError(f"probes must be a list drawn from {PROBES}, got {probes!r}")

    budget = _Budget(time_budget_s)
    doc = _Doctor(loader, budget, max_batches, workers, float(step_s), between_epochs)
    methods = {
        "pickling": doc.pickling, "batches": doc.batches, "iterable": doc.iterable_probe,
        "random": doc.random_probe, "persistent": doc.persistent, "distributed": doc.distributed,
        "containers": doc.containers, "speed": doc.speed,
    }
    ran, skipped = [], {}
    saved = _RandomState(loader)
    names = [p for p in PROBES if p in chosen]
    steps = progress_bar(names, desc="doctor", total=len(names)) if progress else names
    # torch warns when a loader asks for more workers than cores; the sweep asks for it on
    # purpose, and the user's own setting is reported as the finding speed.workers_over_cores
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_WORKER_WARNING, category=UserWarning)
        try:
            for name in steps:
                if not doc.applies(name):
                    continue
                if budget.left() <= 0 and name not in ("pickling", "containers"):  # no worker: instant
                    skipped[name] = "time budget spent"
                    continue
                if name in ("iterable", "random", "persistent") and not doc.can_start_workers():
                    skipped[name] = f"time budget too short for another worker start-up ({doc.startup_s:.1f} s)"
                    continue
                if not doc.workers_ok and name in ("iterable", "random", "persistent", "speed"):
                    skipped[name] = "workers cannot start"
                    continue
                try:
                    methods[name]()
                    ran.append(name)
                except Exception as exc:  # noqa: BLE001 - the user's loader failing is a finding
                    doc.add(
                        "error", "loader.raises", f"the {name} probe failed: {one_line(exc)}",
                        "Run one epoch with num_workers=0 to see the full traceback in the main process.",
                        probe=name,
                    )
                    ran.append(name)
        finally:
            saved.restore()
    order = {s: i for i, s in enumerate(reversed(SEVERITIES))}
    findings = sorted(doc.findings, key=lambda f: (order[f.severity], f.code))
    return Report(findings, doc.figures, ran, skipped, time.perf_counter() - start, describe(loader))


def severity_at_least(report: Report, level: str) -> bool:
    """Return True if ``report`` has a finding at ``level`` or worse."""
    return bool(report.at_least(level))
