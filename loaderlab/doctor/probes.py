"""The doctor's probes: each looks for one pitfall's signature on copies of the user's loader.

``Doctor.why_not(probe)`` alone decides whether a probe runs. Probes that fetch samples use
``Doctor.work``, a loader over pickled copies (``workers.copied``): the user's objects never change.
"""

from __future__ import annotations

import gc
import io
import itertools
import multiprocessing
import os
import pickle
import shutil
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, IterableDataset
from torch.utils.data.distributed import DistributedSampler
from torch.utils.data.sampler import WeightedRandomSampler

from loaderlab.cores import usable_cores
from loaderlab.doctor.findings import Finding, finding
from loaderlab.doctor.workers import (
    ProbeDataset,
    ProbeIterable,
    equal_positions,
    fingerprint,
    identity,
    random_part,
    state_of,
)
from loaderlab.loaders import rebuild, stop_workers
from loaderlab.measure import Pass, WorkerMemorySampler, live_workers, timed_batches, timed_pass
from loaderlab.messages import one_line
from loaderlab.units import MB

MATERIAL_MS = 5.0  # a batch that costs less to make than this gains nothing from more workers
NO_WORKERS = ("pickling", "collate", "coverage", "batches", "samplers", "containers")  # run on a spent budget
SPEED_S = 4.0  # the speed probe's timed windows (start-up excluded) take at most this, all passes together
LARGE = 1.5  # a measured gain or loss this large is a warning; a smaller one is a note
SCHEDSTAT = "/proc/self/schedstat"  # cpu_ns run_delay_ns timeslices (Linux)
MAX_DRAWS = 1_000_000  # the coverage probe counts at most this many indices of one epoch


def samplers_of(loader: DataLoader) -> list[Any]:
    """Return the loader's sampler, batch sampler and the batch sampler's sampler (those set)."""
    found = (loader.sampler, loader.batch_sampler, getattr(loader.batch_sampler, "sampler", None))
    return [s for s in found if s is not None]


class _MainModuleFinder(pickle.Pickler):
    """A pickler into a byte counter that notes every class or function defined in ``__main__``."""

    def __init__(self) -> None:
        self.out = io.BytesIO()
        super().__init__(self.out, protocol=pickle.DEFAULT_PROTOCOL)
        self.in_main: set[str] = set()

    def persistent_id(self, obj: Any) -> None:
        kind = obj if isinstance(obj, type) or callable(obj) and hasattr(obj, "__module__") else type(obj)
        if getattr(kind, "__module__", None) == "__main__":
            self.in_main.add(getattr(kind, "__qualname__", type(kind).__qualname__))


def _probe_loader(loader: DataLoader, dataset: Any, indices: Sequence[int], **overrides: Any) -> DataLoader:
    """Return a copy of ``loader`` over a probe wrapper, one item per "batch" (no collation)."""
    kwargs = {"dataset": dataset, "batch_size": None, "batch_sampler": None, "sampler": list(indices)}
    return rebuild(loader, **kwargs, **{"drop_last": False, "collate_fn": identity, **overrides})


def _fields(dataset: Any) -> Iterator[tuple[str, Any]]:
    """Yield ``(name, value)`` for the attributes of the dataset and of a dataset it wraps."""
    for prefix, ds in [("dataset", dataset), ("dataset.dataset", getattr(dataset, "dataset", None))]:
        for name, value in (getattr(ds, "__dict__", None) or {}).items():
            yield f"{prefix}.{name}", value


def _tensors(obj: Any) -> list[Any]:
    """Return the tensors and arrays in a sample or batch, in a fixed order."""
    if isinstance(obj, (torch.Tensor, np.ndarray)):
        return [obj]
    if isinstance(obj, dict):
        return [t for k in sorted(obj, key=repr) for t in _tensors(obj[k])]
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in _tensors(item)]
    return []


def _container_mb(value: Any) -> float | None:
    """Return the estimated size (MB) of a Python container of 10,000+ objects, else None."""
    if isinstance(value, np.ndarray):
        value = value.reshape(-1) if value.dtype == object else ()
    if not isinstance(value, (list, tuple, dict, set, np.ndarray)) or len(value) < 10_000:
        return None
    first = list(itertools.islice(value.items() if isinstance(value, dict) else value, 64))
    each = [sum(map(sys.getsizeof, x)) if isinstance(value, dict) else sys.getsizeof(x) for x in first]
    mb = (sys.getsizeof(value) + len(value) * (sum(each) / 64)) / MB
    return mb if mb >= 4 else None


def _run_delay() -> float:
    """Return the seconds this process has spent queued for a CPU core (Linux schedstat)."""
    with open(SCHEDSTAT) as f:
        return int(f.read().split()[1]) / 1e9


def _length(dataset: Any) -> int | None:
    """Return ``len(dataset)``, or None when it has no length."""
    try:
        return len(dataset)
    except TypeError:
        return None


def _common(position_sets: list[set[int] | None]) -> tuple[int, int]:
    """Return (how many random positions were equal in every compared pair, pairs compared)."""
    sets = [p for p in position_sets if p is not None]
    return (len(set.intersection(*sets)), len(sets)) if sets else (0, 0)


def stretch_rates(run: Pass, skip: int, stretches: int = 3) -> list[float]:
    """Return samples/s over ``stretches`` consecutive stretches of a pass after its first ``skip``
    batches (those made during start-up), on the loop's clock (arrival to arrival, the loop body
    included), or [] when a stretch would be shorter than 2 rounds. A round is a batch from each
    worker (1 batch without workers): with several workers batches arrive in bursts, one per round. A
    stretch's longest round counts as its median one: one pause of a busy machine does not decide."""
    rounds = max(1, run.num_workers)
    arrivals, sizes = run.received_s[skip - 1:], run.sizes[skip:]
    each = len(sizes) // stretches // rounds * rounds
    if each < 2 * rounds:
        return []
    rates = []
    for i in range(stretches):
        ends = np.asarray(arrivals[i * each:(i + 1) * each + 1:rounds])
        times = np.diff(ends)
        seconds = float(times.sum() - times.max() + np.median(times))
        rates.append(sum(sizes[i * each:(i + 1) * each]) / max(seconds, 1e-9))
    return rates


def growth_after_start(sampler: WorkerMemorySampler, before: set[int], start: int | None) -> dict[int, float]:
    """Return each new worker's USS growth (MB) from record ``start`` on: peak minus first
    reading; {} without 2 readings."""
    readings: dict[int, list[float]] = {}
    for r in sampler.records[start:] if start is not None else ():
        if r.role == "worker" and r.pid not in before:
            readings.setdefault(r.pid, []).append(r.uss_mb)
    return {pid: max(v) - v[0] for pid, v in readings.items() if len(v) >= 2}


class Doctor:
    """The probes of one ``doctor(...)`` call; ``work`` is the loader over the copies (or None)."""

    def __init__(self, loader: DataLoader, work: DataLoader | None, copy_problem: str | None, budget_s: float,
                 max_batches: int, workers: Sequence[int] | None, step_s: float,
                 between_epochs: Callable[[DataLoader, int], Any] | None, shm_bytes: int | None) -> None:
        self.loader, self.work, self.copy_problem = loader, work, copy_problem
        self.end, self.max_batches, self.workers = time.perf_counter() + budget_s, max_batches, workers
        self.step_s, self.between_epochs, self.shm_bytes = step_s, between_epochs, shm_bytes
        self.dataset = work.dataset if work is not None else None  # the copy: probes fetch from it alone
        self.iterable = isinstance(loader.dataset, IterableDataset)
        try:
            self.n = None if self.iterable else len(loader.dataset)  # type: ignore[arg-type]
        except TypeError:
            self.n = None
        ctx = loader.multiprocessing_context  # a context (torch converts a name) or None
        self.method = ctx.get_start_method() if ctx else multiprocessing.get_start_method()
        self.findings: list[Finding] = []
        self.figures: dict[str, dict[str, Any]] = {}
        self.workers_ok = self.batches_ok = True  # False once workers cannot start / batches cannot collate
        self.stream_duplicates = False
        self.startup_s = 0.0  # longest wait seen for a first item from new workers

    def left(self) -> float:
        """Return the seconds left of the time budget."""
        return self.end - time.perf_counter()

    def add(self, code: str, severity: str | None = None, **figures: Any) -> None:
        self.findings.append(finding(code, severity, **figures))

    def started(self, seconds: float) -> None:
        """Note how long new workers took to deliver their first item (start-up included)."""
        self.startup_s = max(self.startup_s, seconds)

    def why_not(self, probe: str) -> tuple[str, str] | None:
        """Return None when ``probe`` runs now, else ("n/a", why: nothing to look at) or
        ("skipped", why: something to look at that could not be probed)."""
        loader, kinds = self.loader, {type(s) for s in samplers_of(self.loader)}
        not_applicable = {
            "stream": not self.iterable and "not an IterableDataset",
            "batches": self.iterable and "an IterableDataset (the stream probe counts its batches)",
            "random": not self.n and "no indexable samples",
            "coverage": not self.n and "no sampler (an IterableDataset) or no indexable samples",
            "persistent": not (loader.persistent_workers and loader.num_workers and self.n)
            and "no persistent workers over indexable samples",
            "samplers": not any(issubclass(k, (DistributedSampler, WeightedRandomSampler)) for k in kinds)
            and "no DistributedSampler or WeightedRandomSampler",
            "collate": (loader.batch_size is None or not (self.iterable or self.n))
            and "no automatic batching",
        }.get(probe)
        if not_applicable:
            return "n/a", not_applicable
        if self.work is None and probe not in ("pickling", "containers"):
            return "skipped", f"the dataset {self.copy_problem}"
        if not self.workers_ok and probe in ("stream", "random", "persistent", "speed"):
            return "skipped", "workers cannot start"
        if not self.batches_ok and probe in ("stream", "speed"):
            return "skipped", "batches cannot be collated"
        if self.left() <= 0 and probe not in NO_WORKERS:
            return "skipped", "time budget spent"
        if probe in ("stream", "random", "persistent") and self.left() <= self.startup_s:
            return "skipped", f"time budget too short for another worker start-up ({self.startup_s:.1f} s)"
        return None

    def _hook(self, loader: DataLoader, epoch: int) -> None:
        if self.between_epochs is not None:
            self.between_epochs(loader, epoch)

    # -- pickling and open files (the user's objects, read only) ----------------------------
    def pickling(self) -> None:
        loader, sizes, failed, in_main = self.loader, {}, {}, set()
        for name in ("dataset", "collate_fn", "worker_init_fn"):
            if getattr(loader, name) is None:
                continue
            finder = _MainModuleFinder()
            try:
                finder.dump(getattr(loader, name))
                sizes[name] = finder.out.tell()
            except Exception as exc:  # noqa: BLE001 - any pickling error is the finding
                failed[name] = one_line(exc)
            in_main |= finder.in_main
        self.figures["pickling"] = {"pickled_mb": round(sizes.get("dataset", 0) / MB, 3),
                                    "failed": sorted(failed)}
        opened = []
        for name, value in _fields(loader.dataset):
            if isinstance(value, io.IOBase) and not value.closed:
                opened.append(f"file {name} ({getattr(value, 'name', '?')})")
            elif isinstance(value, socket.socket) and value.fileno() >= 0:
                opened.append(f"socket {name}")
        if opened:
            self.add("dataset.open_file", None if loader.num_workers else "warning", names=", ".join(opened))
        if failed:
            self.workers_ok = not (loader.num_workers and self.method in ("spawn", "forkserver"))
            when = "workers started with spawn (macOS, Windows) or forkserver will fail"
            if not self.workers_ok:
                when = f"this loader starts its workers with {self.method}, so iter(loader) fails"
            what = ", ".join(f"{k} ({v})" for k, v in failed.items())
            self.add("pickle.fails", "warning" if self.workers_ok else None, what=what, when=when,
                     failed=sorted(failed))
        if in_main:
            self.add("pickle.main_module", names=", ".join(sorted(in_main)), classes=sorted(in_main))

    # -- one batch: can it be collated, and does it fit /dev/shm ------------------------------
    def collate(self) -> None:
        loader, ds, bs = self.loader, self.dataset, self.loader.batch_size
        if self.iterable:
            samples = list(itertools.islice(iter(ds), min(bs, 16)))
        else:
            m = min(self.n, bs, 16)
            samples = [ds[(j * self.n) // m] for j in range(m)]
        try:
            batch = loader.collate_fn(samples)
        except Exception as exc:
            shapes = sorted({tuple(t.shape) for s in samples for t in _tensors(s)[:1]})
            if len(shapes) < 2:
                raise
            self.batches_ok = False
            self.add("collate.variable_length", count=len(samples), shapes=", ".join(map(str, shapes[:4])),
                     error=one_line(exc)[:80])
            return
        batch_mb = sum(t.nbytes for t in _tensors(batch)) / MB * bs / max(1, len(samples))
        workers, prefetch = loader.num_workers, loader.prefetch_factor or 2
        shm = self.shm_bytes
        if shm is None and os.path.isdir("/dev/shm"):
            shm = shutil.disk_usage("/dev/shm").free
        need_mb = batch_mb * prefetch * workers
        self.figures["collate"] = {"samples": len(samples), "batch_mb": round(batch_mb, 2), "shm_need_mb":
                                   round(need_mb, 1), "shm_mb": None if shm is None else round(shm / MB, 1)}
        if shm is not None and workers and need_mb * MB > shm:
            self.add("memory.shm_too_small", batch_mb=round(batch_mb, 1), workers=workers, prefetch=prefetch,
                     need_mb=round(need_mb), shm_mb=round(shm / MB))

    # -- map-style batch sizes -------------------------------------------------------------
    def batches(self) -> None:
        bs = self.work.batch_sampler
        if bs is None:
            return
        if type(bs) is BatchSampler:
            n, size, total = len(bs.sampler), bs.batch_size, len(bs)  # type: ignore[arg-type]
            ones = 1 if (n % size == 1 and not bs.drop_last and size > 1) else 0
        else:  # a custom batch sampler (the copy): count what one epoch yields
            sizes = [len(b) for b in itertools.islice(iter(bs), 100_000)]
            ones = sum(s == 1 for s in sizes) if max(sizes, default=0) > 1 else 0
            total, n, size = len(sizes), sum(sizes), max(sizes, default=0)
        self.figures["batches"] = {"batches": total, "samples": n, "batch_size": size, "batches_of_1": ones}
        if ones:
            self.add("batch.last_size_1", samples=n, batch_size=size)

    # -- streams: items an epoch delivers against items the stream holds ------------------------
    def stream(self) -> None:
        loader, share = self.loader, max(1.0, self.left() / 3)
        held: Counter[str] = Counter()
        deadline = time.perf_counter() + share
        for count, item in enumerate(self.dataset, 1):  # here get_worker_info() is None: the whole stream
            held[fingerprint(item)] += 1
            if time.perf_counter() > deadline or count >= 100_000:
                self.figures["stream"] = {"counted": False, "held_at_least": count}
                return
        probe = rebuild(self.work, dataset=ProbeIterable(self.dataset), collate_fn=identity,
                        persistent_workers=False)
        try:
            len(probe)  # as a loop showing progress does: torch then checks the count against __len__
        except TypeError:
            pass
        delivered: Counter[str] = Counter()
        per_worker: Counter[int] = Counter()  # items each worker delivered (a batch comes from one worker)
        sizes, run = [], Pass()
        for batch in timed_batches(probe, run, seconds=share, kill=True):
            items = batch if loader.batch_size is not None else [batch]
            sizes.append(len(items))
            delivered.update(fp for _, fp in items)
            per_worker[items[0][0] if items else -1] += len(items)
        self.started(run.first_batch_s if loader.num_workers and run.batches else 0.0)
        if not run.finished:
            self.figures["stream"] = {"counted": False, "delivered_at_least": sum(sizes)}
            return
        self._stream_findings(held, delivered, sizes, per_worker)

    def _stream_findings(self, held: Counter[str], delivered: Counter[str], sizes: list[int],
                         per_worker: Counter[int]) -> None:
        loader, size = self.loader, self.loader.batch_size or 1
        n_held, n_delivered = sum(held.values()), sum(delivered.values())
        extra = sum(max(0, c - held[fp]) for fp, c in delivered.items() if fp in held)
        lost = max(0, n_held - (n_delivered - extra))
        partial = sorted(s for s in sizes if s < size)
        ones = sum(s == 1 for s in sizes) if size > 1 else 0
        workers = max(1, loader.num_workers)
        self.figures["stream"] = {"counted": True, "held": n_held, "delivered": n_delivered,
                                  "duplicated": extra, "lost": lost, "batches": len(sizes),
                                  "batch_sizes": dict(sorted(Counter(sizes).items())), "batches_of_1": ones,
                                  "partial_batches": partial,
                                  "items_per_worker": {str(k): v for k, v in sorted(per_worker.items())}}
        if extra:
            self.stream_duplicates = True
            self.add("iterable.duplicates", delivered=n_delivered, held=n_held, extra=extra, workers=workers)
        if lost:
            why, severity = "the workers' shards leave them out", None
            advice = ("Keep drop_last=False and shard the stream in blocks of batch_size items (worker k "
                      "takes blocks k, k + num_workers, ...): only the epoch's last batch is then partial.")
            if loader.drop_last:
                why = f"drop_last=True drops the partial batch of each of the {workers} worker(s)"
                if lost < size:  # no more than drop_last loses on a map-style loader
                    severity = "info"
                    advice = "Nothing to fix: fewer items than one batch sit out each epoch."
            self.add("iterable.lost_items", severity, delivered=n_delivered - extra, held=n_held, lost=lost,
                     why=why, advice=advice)
        elif len(partial) > 1:
            self.add("iterable.partial_batches", count=len(partial), sizes=partial, workers=workers,
                     would_lose=sum(partial))
        reported = _length(self.dataset)
        self.figures["stream"]["reported_len"] = reported
        if reported is not None and reported != n_delivered and not (extra or lost):
            self.add("iterable.wrong_length", reported=reported, delivered=n_delivered,
                     off=abs(reported - n_delivered))
        if ones:
            tails = {k: v % size for k, v in sorted(per_worker.items())}
            self.add("iterable.batch_of_1", ones=ones, sizes=dict(sorted(Counter(sizes).items())),
                     per_worker=", ".join(str(v) for _, v in sorted(per_worker.items())),
                     would_lose=sum(tails.values()), tails=tails)

    # -- the sampler alone: which indices one epoch draws (no sample is read) -------------------
    def coverage(self) -> None:
        work, n = self.work, self.n
        source = work.batch_sampler if work.batch_sampler is not None else work.sampler
        seen: set[Any] = set()
        drawn = outside = 0
        deadline = time.perf_counter() + max(0.5, min(2.0, self.left() / 10))
        complete = True
        for item in source:
            batch = isinstance(item, (list, tuple)) and work.batch_sampler is not None
            for index in item if batch else [item]:
                drawn += 1
                seen.add(index)
                outside += isinstance(index, int) and not 0 <= index < n
            if drawn >= MAX_DRAWS or time.perf_counter() > deadline:
                complete = False
                break
        self.figures["coverage"] = {"samples": n, "drawn": drawn, "distinct": len(seen),
                                    "share": round(len(seen) / n, 3), "outside": outside,
                                    "whole_epoch": complete}
        weighted = next((s for s in samplers_of(work) if isinstance(s, WeightedRandomSampler)), None)
        if weighted is None or len(weighted.weights) == n:
            return
        k = len(weighted.weights)
        effect = (f"all below {k}: samples {k} to {n - 1} are never drawn" if k < n else
                  f"{outside} of the {drawn} draws beyond the last index ({n - 1}), where fetching fails")
        self.add("sampler.weights_length", weights=k, samples=n, distinct=len(seen), effect=effect)

    # -- random draws ------------------------------------------------------------------------
    def random(self) -> None:
        n, ds, k = self.n, self.dataset, min(12, self.n)
        indices = sorted({(j * n) // k for j in range(k)})
        masks = {i: m for i in indices if (m := random_part(ds[i], ds[i])) is not None and m.any()}
        self.figures["random"] = {"indices": len(indices), "random_in_main": len(masks)}
        if len(masks) * 2 < len(indices):
            return  # the samples are (mostly) deterministic: nothing to compare
        doubled, nw = [i for i in masks for _ in range(2)], max(2, self.loader.num_workers)
        wrapped = ProbeDataset(ds)
        # in_order: the indices go to the workers in turn, so worker 0 fetches doubled[::nw]
        loaders = [_probe_loader(self.work, wrapped, doubled, num_workers=nw, persistent_workers=False,
                                 in_order=True)]
        # Epoch 2: one fresh worker fetching what worker 0 fetched draws the same values exactly when
        # every epoch's workers start from the same state (persistent workers continue their generators).
        # Without a between_epochs hook nothing changes between the epochs: both start at once.
        if not self.loader.persistent_workers:
            loaders.append(_probe_loader(self.work, wrapped, doubled[::nw], num_workers=1,
                                         persistent_workers=False))
        together, epochs, iterators = self.between_epochs is None, [], {}
        try:
            t0 = time.perf_counter()
            if together:
                iterators = {epoch: iter(probe) for epoch, probe in enumerate(loaders)}
            for epoch, probe in enumerate(loaders):
                if not together:
                    if epoch and self.left() <= self.startup_s:
                        break
                    t0, iterators[epoch] = time.perf_counter(), iter(probe)
                got: dict[tuple[int, int], Any] = {}
                for index, worker, sample in iterators[epoch]:
                    if not got and not (together and epoch):
                        self.started(time.perf_counter() - t0)
                    got[(index, worker)] = sample
                stop_workers(iterators.pop(epoch))
                epochs.append(got)
                self._hook(probe, epoch + 1)
        finally:
            for iterator in iterators.values():
                stop_workers(iterator)
        first, by_index = epochs[0], {}
        for (index, _worker), sample in first.items():
            by_index.setdefault(index, []).append(sample)
        dup, pairs = _common([equal_positions(masks[i], *v[:2]) for i, v in by_index.items()
                              if len(v) >= 2])
        self.figures["random"].update(index_pairs=pairs, values_repeated_across_workers=dup)
        if pairs >= 3 and dup:
            self.add("random.duplicate_across_workers", random=len(masks), indices=len(indices), values=dup,
                     pairs=pairs)
        if len(epochs) == 2:
            dup, compared = _common([equal_positions(masks[key[0]], first[key], epochs[1][key])
                                     for key in first if key in epochs[1]])
            self.figures["random"].update(compared_across_epochs=compared, values_repeated_across_epochs=dup)
            if compared >= 3 and dup:
                self.add("random.repeats_across_epochs", values=dup, compared=compared)

    # -- persistent workers and stale state ----------------------------------------------------
    def persistent(self) -> None:
        ds, hook = self.dataset, self.between_epochs
        if hook is None:
            if callable(getattr(ds, "set_epoch", None)):
                hook = lambda loader, epoch: ds.set_epoch(epoch)  # noqa: E731
            elif isinstance(getattr(ds, "epoch", None), int):
                hook = lambda loader, epoch: setattr(ds, "epoch", epoch)  # noqa: E731
            else:
                self.figures["persistent"] = {"checked": False}
                return
        indices = range(min(self.n, 2 * self.loader.num_workers))
        probe = _probe_loader(self.work, ProbeDataset(ds, with_state=True), indices)
        try:
            t0 = time.perf_counter()
            list(probe)  # epoch 1: the workers start with the dataset as it is now
            self.started(time.perf_counter() - t0)
            before = state_of(ds)
            hook(probe, 1)
            main_state = state_of(ds)
            changed = sorted(k for k in main_state if main_state[k] != before.get(k))
            rows = list(probe)  # epoch 2: the same workers
        finally:
            if probe._iterator is not None:
                stop_workers(probe._iterator)
                probe._iterator = None
        stale = sorted({k for *_, state in rows for k in changed if state and state.get(k) != main_state[k]})
        self.figures["persistent"] = {"checked": True, "changed_in_main": changed, "stale_in_workers": stale}
        if stale:
            self.add("persistent.stale_state", stale=", ".join(stale), rows=len(rows), attributes=stale)

    # -- samplers: DistributedSampler epochs, padding and drops; WeightedRandomSampler mix -------
    def samplers(self) -> None:
        found = samplers_of(self.work)
        dist = next((s for s in found if isinstance(s, DistributedSampler)), None)
        if dist is not None:
            orders = []
            for epoch in range(2):
                orders.append(list(iter(dist)))
                self._hook(self.work, epoch + 1)
            same, n = orders[0] == orders[1], len(dist.dataset)  # type: ignore[arg-type]
            extra, shard = dist.total_size - n, {"samples": n, "replicas": dist.num_replicas}
            self.figures["distributed"] = {"shuffle": dist.shuffle, "same_order": same,
                                           "indices": len(orders[0]), **shard, "padded": max(0, extra),
                                           "dropped": max(0, -extra)}
            if dist.shuffle and same and len(orders[0]) > 1:
                self.add("distributed.no_set_epoch", indices=len(orders[0]))
            if extra > 0:
                self.add("distributed.padding", **shard, repeats=extra, per_rank=dist.num_samples)
            elif extra < 0:
                self.add("distributed.drops", **shard, dropped=-extra, per_rank=dist.num_samples)
        weighted = next((s for s in found if isinstance(s, WeightedRandomSampler)), None)
        if weighted is None:
            return
        weights = weighted.weights.double()
        attrs = [getattr(self.dataset, a, None) for a in ("targets", "labels")]
        labels = next((v for v in attrs if hasattr(v, "__len__") and len(v) == len(weights)), None)
        if labels is None:
            self.figures["weighted"] = {"labels": "not reachable (no dataset.targets or dataset.labels)"}
            return
        labels = list(labels.tolist() if hasattr(labels, "tolist") else labels)
        classes = sorted(set(labels), key=repr)
        position = {c: i for i, c in enumerate(classes)}
        index = torch.tensor([position[y] for y in labels])
        mix = torch.zeros(len(classes), dtype=torch.float64).index_add_(0, index, weights) / weights.sum()
        plain = torch.bincount(index, minlength=len(classes)).double() / len(labels)
        shares = [{str(c): round(float(p), 3) for c, p in zip(classes, ps, strict=True)}
                  for ps in (mix, plain)]
        self.figures["weighted"] = {"expected_mix": shares[0], "label_mix": shares[1]}
        text = [", ".join(f"{c}: {p:.0%}" for c, p in share.items()) for share in shares]
        balanced = len(classes) < 2 or float(mix.max()) < 2 * float(mix.min())
        self.add("sampler.weighted_mix", "info" if balanced else None, mix=text[0], plain=text[1],
                 expected_mix=shares[0])

    # -- large Python containers (attributes only, no fetch) ------------------------------------
    def containers(self) -> None:
        found = {name: (len(value), mb) for name, value in _fields(self.loader.dataset)
                 if (mb := _container_mb(value)) is not None}
        self.figures["containers"] = {k: {"items": n, "mb": round(mb, 1)} for k, (n, mb) in found.items()}
        for name, (n, mb) in found.items():
            self.add("memory.python_container", "warning" if self.loader.num_workers else "info",
                     name=name, items=n, mb=round(mb, 1))

    # -- speed and worker memory ----------------------------------------------------------------
    def candidates(self, cores: int) -> list[int]:
        """Return the num_workers values the speed probe compares with the loader's own: the
        caller's ``workers``, else one: at most one per usable core when the loader has more
        workers than cores; else min(cores, 4) (at least 2) when it has fewer; else 0."""
        user = self.loader.num_workers
        if self.workers is not None:
            return [w for w in dict.fromkeys(self.workers) if w != user]
        if self.stream_duplicates:
            return []  # another count would change what the unsharded stream delivers
        if user > cores:
            return [min(cores, 4)]
        most = max(2, min(cores, 4))
        return [most] if user < most else [0]

    def fetch_profile(self, most: int = 16, seconds: float = 1.0) -> dict[str, Any] | None:
        """Return where a sample's fetch time goes, from up to ``most`` fetches in this process:
        CPU time, time queued for a core (Linux's schedstat ``run_delay``: what other jobs cost),
        and the rest, spent waiting (sleep, disk, network); None without /proc/self/schedstat."""
        if self.n is None or not os.path.exists(SCHEDSTAT):
            return None
        wall = cpu = queued = 0.0
        k, deadline = min(self.n, most), time.perf_counter() + seconds
        for j in range(k):
            t0, c0, q0 = time.perf_counter(), time.process_time(), _run_delay()
            self.dataset[(j * self.n) // k]
            wall, cpu = wall + time.perf_counter() - t0, cpu + time.process_time() - c0
            queued += _run_delay() - q0
            if time.perf_counter() > deadline:
                k = j + 1
                break
        waiting = max(0.0, wall - cpu - queued)
        return {"fetches": k, "cpu_ms": round(1000 * cpu / k, 2), "queued_ms": round(1000 * queued / k, 2),
                "waiting_ms": round(1000 * waiting / k, 2), "computes": cpu >= waiting}

    def speed(self) -> None:
        cores, user = usable_cores(), self.loader.num_workers
        others = self.candidates(cores)
        if user > cores:  # do the samples compute or wait? (the extra workers can gain only on waits)
            self.figures.setdefault("speed", {})["fetch"] = self.fetch_profile()
        window = min(self.left(), SPEED_S) / (1 + len(others))
        passes: dict[int, Pass] = {}
        growth: dict[int, float] = {}
        memory_at = max([w for w in others if w >= 2] or [user if user >= 2 else -1])
        for w in [user, *others]:
            if passes and (self.left() < 0.2 or w and self.left() <= self.startup_s + 0.5):
                self.figures.setdefault("speed", {})["not_compared"] = f"num_workers={w}: time budget spent"
                break
            context = self.work.multiprocessing_context if w else None  # torch refuses one without workers
            copy = rebuild(self.work, num_workers=w, persistent_workers=False,
                           multiprocessing_context=context)
            # the batches made during start-up wait in the buffer: 6 rounds more are timed
            batches = max(self.max_batches, self._buffered(w) + 6 * max(2, w))
            passes[w] = self._timed(copy, w, window, batches, growth if w == memory_at else None)
            if w and passes[w].waits_s:
                self.started(passes[w].waits_s[0])
            if w == user == 0 and not self.workers and self._cheap(passes[0]):
                break  # a batch this cheap gains nothing from workers: no worker is started
        self._speed_findings(passes, growth, user, cores)

    def _buffered(self, w: int) -> int:
        """Return how many batches ``w`` workers hold ready once started (1 without workers)."""
        return w * (self.loader.prefetch_factor or 2) if w else 1

    def _cheap(self, run: Pass) -> bool:
        """Return True when the batches of a 0-worker pass cost less than MATERIAL_MS to make (the
        median batch: a pause of a busy machine does not decide)."""
        return bool(run.waits_s) and 1000 * float(np.median(run.waits_s)) < MATERIAL_MS

    def _timed(self, copy: DataLoader, w: int, window: float, batches: int,
               growth: dict[int, float] | None) -> Pass:
        """Time one pass (``window`` seconds once the first batch arrived); with ``growth``, also
        read each worker's memory twice, outside the timed stretches: once every worker delivered a
        batch (start-up behind them, the buffer still filling) and after the last batch."""
        if growth is None:
            return timed_pass(copy, batches, window, self.step_s or None, kill=True)
        before = {p.pid for p in live_workers()}
        sampler = WorkerMemorySampler(include_main=False)  # no thread: two readings, taken here
        gc.collect()  # forked workers inherit the collector's counts: a full collection due soon would
        # run in each worker and copy every page holding an object, growth no dataset caused
        marks: list[int] = []

        def read_memory(count: int) -> None:
            if count == w:
                marks.append(len(sampler.records))
                sampler.sample()

        run = timed_pass(copy, batches, window, self.step_s or None, read_memory, kill=True,
                         before_stop=sampler.sample)
        self.memory_workers = w
        growth.update(growth_after_start(sampler, before, marks[0] if marks else None))
        return run

    def _speed_findings(self, passes: dict[int, Pass], growth: dict[int, float], user: int,
                        cores: int) -> None:
        stretches = {w: stretch_rates(p, self._buffered(w)) for w, p in passes.items()}
        rates = {w: float(np.median(stretches[w])) if stretches[w] else None for w in passes}
        run = passes[user]  # a batch's cost: from the steady rate, else the median wait
        cost_ms = (1000 * run.samples / max(1, run.batches) / rates[user] if rates[user]
                   else 1000 * float(np.median(run.waits_s or [0.0])))
        figures = self.figures.setdefault("speed", {})
        figures.update({
            "cores": cores, "window_s": {w: round(p.seconds - p.first_batch_s, 2) for w, p in passes.items()},
            "samples_per_s": {w: round(r or 0, 1) for w, r in rates.items()},
            "first_batch_s": {w: round(p.first_batch_s, 2) for w, p in passes.items()},
            "batches": {w: p.batches for w, p in passes.items()},
            "batch_cost_ms": None if cost_ms is None else round(cost_ms, 2)})
        if growth:
            mb = {str(k): round(v, 1) for k, v in growth.items()}
            self.figures["memory"] = {"worker_uss_growth_mb": mb}
            if max(growth.values()) >= 32:
                self.add("memory.worker_growth", mb=round(max(growth.values()), 1),
                         batches=passes[self.memory_workers].batches)
        if len(passes) == 1:
            cheap = f"a batch costs {cost_ms:.1f} ms to make here: workers cannot make it faster"
            figures["verdict"] = cheap if user == 0 and cost_ms < MATERIAL_MS else "nothing to compare"
            return
        for w in passes:
            if w != user:
                self._compare(w, user, cores, passes, stretches, rates)

    def _compare(self, other: int, user: int, cores: int, passes: dict[int, Pass],
                 stretches: dict[int, list[float]], rates: dict[int, float | None]) -> None:
        """Add the finding of one measured comparison (another num_workers against the loader's)."""
        mine, theirs = rates[user], rates[other]
        if not mine or not theirs:
            self.figures["speed"]["verdict"] = "too few batches to tell a difference from noise"
            if user > cores:  # torch's warning alone, as a note
                self.add("speed.workers_over_cores", "info", workers=user, cores=cores, rate=mine or 0,
                         best_rate=theirs or 0, best=other, ratio="?", how="too few batches to measure",
                         verdict="not measured", advice="Measure with a longer time budget.")
            return
        fast, slow = (other, user) if theirs > mine else (user, other)
        beyond = bool(stretches[fast] and stretches[slow]) and min(stretches[fast]) > max(stretches[slow])
        ratio = max(mine, theirs) / min(mine, theirs)
        large = beyond and ratio >= LARGE
        window = self.figures["speed"]["window_s"][user]
        how = (f"medians of {len(stretches[user])} stretches of a {window} s "
               f"window, start-up excluded" + (", every stretch of the faster one ahead" if beyond else ""))
        self.figures["speed"].update(compared=other, speedup=round(theirs / mine, 2), beyond_noise=beyond)
        same = dict(best=other, best_rate=theirs, rate=mine, workers=user, how=how)
        if user > cores:
            gain = round(mine / theirs, 2)
            fetch = self.figures["speed"].get("fetch")
            computes = bool(fetch and fetch["computes"])
            pays = mine >= LARGE * theirs and not computes
            if computes:
                gained = ("gain only CPU time that other jobs on this machine would get" if gain >= LARGE
                          else "gain nothing and each costs memory and start-up")
                verdict = (f"a fetch here is {fetch['cpu_ms']} ms of CPU and {fetch['waiting_ms']} ms of "
                           f"waiting: samples that compute cannot go faster than {cores} core(s), so the "
                           f"{user - other} extra workers {gained}")
            elif pays:
                verdict = ("the extra workers pay off (samples wait, on disk or network)" if beyond else
                           "the extra workers seem to pay off, within noise")
            else:
                verdict = (f"the {user - other} extra workers gain less than {LARGE}x here and each costs "
                           "memory and start-up")
            advice = ("Keep them; samples that wait (not compute) gain from more workers than cores." if pays
                      else f"Use num_workers={other}: one worker per core is enough for samples that "
                      "compute.")
            self.add("speed.workers_over_cores", "info" if pays else None, cores=cores, ratio=gain,
                     verdict=verdict, advice=advice, **same)
        elif other > user and theirs > mine:
            advice = (f"Use num_workers={other} (and measure again with your training step, step_s)." if large
                      else "Keep yours: the difference is within what a busy machine varies.")
            self.add("speed.more_workers", None if large else "info", speedup=round(theirs / mine, 1),
                     advice=advice, **same)
        elif other < user and theirs > mine and large:
            self.add("speed.workers_slower", speedup=round(theirs / mine, 1), **same)
