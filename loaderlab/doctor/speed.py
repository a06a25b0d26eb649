"""The doctor's speed probe: timed passes per num_workers, notes only beyond noise, worker memory."""

from __future__ import annotations

import os

import numpy as np
from torch.utils.data import DataLoader

from loaderlab.loaders import rebuild
from loaderlab.measure import Pass, WorkerMemorySampler, live_workers, timed_pass

MB = 1024 * 1024
MATERIAL_MS = 5.0  # a batch that costs less to make than this gains nothing from more workers


def stretch_rates(run: Pass, stretches: int = 3, least: int = 3) -> list[float]:
    """Return samples/s over consecutive stretches of a pass after start-up (repeats; a stretch's
    longest wait counts as its median: one pause of a busy machine does not decide), or []."""
    skip = max(1, run.num_workers)  # each worker's first batch includes its start-up
    sizes, waits = run.sizes[skip:], run.waits_s[skip:]
    each = len(sizes) // stretches
    if each < least:
        return []
    seconds = [sum(w) - max(w) + float(np.median(w)) for w in (waits[i * each:(i + 1) * each] for i in range(stretches))]
    return [sum(sizes[:each * stretches]) / stretches / max(s, 1e-9) for s in seconds]


def growth_after_start(sampler: WorkerMemorySampler, before: set[int], start: int | None) -> dict[int, float]:
    """Return each new worker's USS growth (MB): its peak minus its first reading taken from
    record ``start`` on (once every worker had delivered a batch); {} without 2 readings."""
    if start is None:
        return {}
    readings: dict[int, list[float]] = {}
    for r in sampler.records[start:]:
        if r.role == "worker" and r.pid not in before:
            readings.setdefault(r.pid, []).append(r.uss_mb)
    return {pid: max(v) - v[0] for pid, v in readings.items() if len(v) >= 2}


class SpeedProbes:
    """The speed probe's methods, mixed into ``probes.Doctor``."""

    # -- speed and worker memory ----------------------------------------------------------------
    def speed(self) -> None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        user = self.loader.num_workers
        if user > cores:
            self.add("speed.workers_over_cores", workers=user, cores=cores)
        counts = [user] if self.stream_duplicates else list(dict.fromkeys([user, *self.workers]))
        if 0 in counts:  # 0 first: it starts no worker, and what a batch costs decides the rest
            counts = [0, *(w for w in counts if w)]
        passes: dict[int, Pass] = {}
        growth: dict[int, float] = {}
        i = 0
        while i < len(counts):
            w = counts[i]
            share = self.left() / (len(counts) - i)
            if passes and w != user and (share < 0.5 or (w > 0 and self.left() <= self.startup_s)):
                break  # your own setting is always measured
            copy = rebuild(self.work, num_workers=w, persistent_workers=False)
            self._timed(copy, w, share, passes, growth, counts)
            if w and passes[w].waits_s:
                self.started(passes[w].waits_s[0])
            if w == 0:
                counts = self._worth_a_pass(counts, passes[0])
            i += 1
        self._speed_findings(passes, growth, user)

    def _worth_a_pass(self, counts: list[int], zero: Pass) -> list[int]:
        """Return the counts still worth a pass once 0 workers measured a batch's cost: more
        workers than yours only when a batch costs ``MATERIAL_MS`` or more; one 2+ pass for memory."""
        rate = zero.steady_samples_per_s
        if rate is None or 1000 * (sum(zero.sizes) / len(zero.sizes)) / rate >= MATERIAL_MS:
            return counts
        kept = [w for w in counts if w <= self.loader.num_workers]
        return kept if any(w >= 2 for w in kept) else kept + [w for w in counts if w >= 2][:1]

    def _timed(self, copy: DataLoader, w: int, share: float, passes: dict[int, Pass], growth: dict[int, float],
               planned: list[int]) -> None:
        """Time one pass; one pass with 2+ workers also samples the workers' memory (not yours
        when another is planned: the sampler's thread takes CPU from the timing)."""
        user = self.loader.num_workers
        others = [c for c in planned if c >= 2 and c != user]
        if not (w >= 2 and not growth and (w != user or not others)):
            passes[w] = timed_pass(copy, self.max_batches, share, self.step_s or None, kill=True)
            return
        before = {p.pid for p in live_workers()}
        marks: list[int] = []

        def read_memory(count: int) -> None:
            if count == w:  # every worker has delivered a batch: start-up is behind them
                marks.append(len(sampler.records))
            if count >= w and (count - w) % 8 == 0:
                sampler.sample()

        with WorkerMemorySampler(interval_s=0.1) as sampler:
            passes[w] = timed_pass(copy, self.max_batches, share, self.step_s or None, read_memory, kill=True)
        self.memory_workers = w
        growth.update(growth_after_start(sampler, before, marks[0] if marks else None))

    def _speed_findings(self, passes: dict[int, Pass], growth: dict[int, float], user: int) -> None:
        stretches = {w: stretch_rates(p) for w, p in passes.items()}
        medians = {w: float(np.median(r)) for w, r in stretches.items() if r}
        self.figures["speed"] = {"samples_per_s": {w: round(p.steady_samples_per_s or 0, 1) for w, p in passes.items()},
                                 "median_samples_per_s": {w: round(m, 1) for w, m in medians.items()},
                                 "batches": {w: p.batches for w, p in passes.items()}}
        if growth:
            self.figures["memory"] = {"worker_uss_growth_mb": {str(k): round(v, 1) for k, v in growth.items()}}
            if max(growth.values()) >= 32:
                self.add("memory.worker_growth", mb=round(max(growth.values()), 1),
                         batches=passes[self.memory_workers].batches)
        mine = medians.get(user)
        if not mine:
            self.figures["speed"]["verdict"] = "too few batches to tell a difference from noise"
            return
        best_w = max(medians, key=medians.get)  # type: ignore[arg-type]
        best = medians[best_w]
        sizes = passes[user].sizes
        zero = medians.get(0)
        cost_ms = 1000 * (sum(sizes) / len(sizes)) / (zero or mine)  # making a batch, in one process
        beyond_noise = min(stretches[best_w]) > max(stretches[user]) and best >= 1.5 * mine
        self.figures["speed"].update(speedup_best=round(best / mine, 2), batch_cost_ms=round(cost_ms, 2),
                                     beyond_noise=beyond_noise)
        if best_w == user or not beyond_noise:
            return
        figures = dict(best=best_w, best_rate=best, rate=mine, workers=user, speedup=round(best / mine, 1),
                       repeats=len(stretches[user]))
        if best_w > user and cost_ms >= MATERIAL_MS:
            self.add("speed.more_workers", **figures)
        elif best_w < user:
            self.add("speed.workers_slower", **figures)
