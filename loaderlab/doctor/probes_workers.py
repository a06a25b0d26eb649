"""Probes that need workers: random draws across workers and epochs, stale persistent state."""

from __future__ import annotations

import time
from typing import Any

from torch.utils.data import BatchSampler, SequentialSampler

from loaderlab.cores import usable_cores
from loaderlab.doctor.probe_base import ProbeBase, common_positions, probe_loader
from loaderlab.doctor.workers import (
    ProbeDataset,
    ThreadProbe,
    busy_threads,
    equal_positions,
    random_part,
    state_of,
)
from loaderlab.loaders import stop_workers
from loaderlab.measure import Pass, timed_batches


class WorkerProbes(ProbeBase):
    """random, persistent, threads."""

    # -- random draws ------------------------------------------------------------------------
    def random(self) -> None:
        ds, indices = self.dataset, self.spread(12)
        masks = {i: m for i in indices if (m := random_part(ds[i], ds[i])) is not None and m.any()}
        self.figures["random"] = {"indices": len(indices), "random_in_main": len(masks)}
        if len(masks) * 2 < len(indices) or len(masks) == 0:
            return  # the samples are (mostly) deterministic: nothing to compare
        in_order = type(self.loader.sampler) is SequentialSampler and type(self.loader.batch_sampler) in (
            BatchSampler,
            type(None),
        )
        if in_order:
            self.add("random.eval_transforms", random=len(masks), indices=len(indices))
        doubled, nw = [i for i in masks for _ in range(2)], max(2, self.loader.num_workers)
        wrapped = ProbeDataset(ds)
        # in_order: the indices go to the workers in turn, so worker 0 fetches doubled[::nw]
        loaders = [
            probe_loader(self.work, wrapped, doubled, num_workers=nw, persistent_workers=False, in_order=True)
        ]
        # Epoch 2: one fresh worker fetching what worker 0 fetched draws the same values exactly when
        # every epoch's workers start from the same state (persistent workers continue their generators).
        # Without a between_epochs hook nothing changes between the epochs: both start at once.
        if not self.loader.persistent_workers:
            loaders.append(
                probe_loader(self.work, wrapped, doubled[::nw], num_workers=1, persistent_workers=False)
            )
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
        first, by_index = epochs[0], dict[int, list[Any]]()
        for (index, _worker), sample in first.items():
            by_index.setdefault(index, []).append(sample)
        dup, pairs = common_positions(
            [equal_positions(masks[i], *v[:2]) for i, v in by_index.items() if len(v) >= 2]
        )
        self.figures["random"].update(index_pairs=pairs, values_repeated_across_workers=dup)
        if pairs >= 3 and dup:
            self.add(
                "random.duplicate_across_workers",
                random=len(masks),
                indices=len(indices),
                values=dup,
                pairs=pairs,
            )
        if len(epochs) == 2:
            dup, compared = common_positions(
                [
                    equal_positions(masks[key[0]], first[key], epochs[1][key])
                    for key in first
                    if key in epochs[1]
                ]
            )
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
        indices = self.spread(2 * self.loader.num_workers)
        probe = probe_loader(self.work, ProbeDataset(ds, with_state=True), indices)
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

    # -- threads inside each worker ----------------------------------------------------------------
    def threads(self) -> None:
        cores, workers = usable_cores(), self.loader.num_workers
        indices = [i for i in self.spread(8) for _ in range(2)]  # twice: the first fetch may warm caches
        # one worker; its first fetch waits SETTLE_S (the pool threads a fork left spinning fall asleep)
        probe = probe_loader(
            self.work, ThreadProbe(self.dataset), indices, num_workers=1, persistent_workers=False
        )
        run, rows = Pass(), []
        for row in timed_batches(probe, run, seconds=max(0.5, min(2.0, self.left() / 4)), kill=True):
            rows.append(row)
        self.started(run.first_batch_s)
        measured = [r for r in rows[1:] if r[2] is not None]
        figures: dict[str, Any] = {
            "fetches": len(measured),
            "workers": workers,
            "cores": min(cores, rows[-1][4]) if rows else cores,
        }
        self.figures["threads"] = figures
        if rows:
            figures["libraries"] = rows[-1][3]
        if rows and rows[-1][2] is None:
            figures["verdict"] = "not measured here: no /proc/self/task/*/schedstat (Linux only)"
            return
        if len(measured) < 3:
            figures["verdict"] = "not measured here: too few fetches in the time budget"
            return
        cores = figures["cores"]
        own = sum(r[1] for r in measured)
        others: dict[int, int] = {}
        for r in measured:
            for tid, ns in r[2].items():
                others[tid] = others.get(tid, 0) + ns
        threads = busy_threads(own, others)
        figures.update(
            busy_threads=threads,
            fetching_cpu_ms=round(own / 1e6, 1),
            other_threads_cpu_ms=round(sum(others.values()) / 1e6, 1),
        )
        if cores < 2:
            figures["verdict"] = "not measured here: 1 usable core (every worker's threads share it)"
            return
        # CPU time per thread, not wall time: contention can slow a thread, not make it work
        if threads >= 2 and workers * threads > cores:
            self.add(
                "workers.threads_oversubscribed",
                threads=threads,
                fetches=len(measured),
                own_ms=figures["fetching_cpu_ms"],
                other_ms=figures["other_threads_cpu_ms"],
                libs=figures["libraries"],
                workers=workers,
                busy=workers * threads,
                cores=cores,
            )
