"""The speed probe: what a sample costs, what other worker counts deliver, worker memory."""

from __future__ import annotations

import gc
import time
from typing import Any

import numpy as np
from torch.utils.data import DataLoader

from loaderlab.cores import usable_cores
from loaderlab.doctor.probe_base import LARGE, MATERIAL_MS, SCHEDSTAT, SPEED_S, ProbeBase
from loaderlab.loaders import rebuild
from loaderlab.measure import Pass, WorkerMemorySampler, live_workers, timed_pass


def _run_delay() -> float:
    """Return the seconds this process has spent queued for a CPU core (Linux schedstat; 0 elsewhere)."""
    try:
        with open(SCHEDSTAT) as f:
            return int(f.read().split()[1]) / 1e9
    except OSError:
        return 0.0


def predicted_gain(fetch: dict[str, Any], workers: int, yours: int, cores: int) -> float:
    """Return the rate ``workers`` should deliver over the rate of ``yours``, from what one fetch
    costs: each worker makes a sample per fetch time, and all of them together no more than
    ``cores`` samples per fetch's CPU time (the time queued for a core counts as CPU)."""
    cpu = (fetch["cpu_ms"] + fetch["queued_ms"]) / 1000
    each = cpu + fetch["waiting_ms"] / 1000

    def rate(k: int) -> float:
        return min(max(1, k) / max(each, 1e-9), max(1, cores) / max(cpu, 1e-9)) if k else 1 / max(each, 1e-9)

    return rate(workers) / rate(yours)


def stretch_rates(run: Pass, skip: int, stretches: int = 3) -> list[float]:
    """Return samples/s over ``stretches`` consecutive stretches of a pass after its first ``skip``
    batches (those made during start-up), on the loop's clock (arrival to arrival, the loop body
    included), or [] when a stretch would be shorter than 2 rounds. A round is a batch from each
    worker (1 batch without workers): with several workers batches arrive in bursts, one per round. A
    stretch's longest round counts as its median one: one pause of a busy machine does not decide."""
    rounds = max(1, run.num_workers)
    arrivals, sizes = run.received_s[skip - 1 :], run.sizes[skip:]
    each = len(sizes) // stretches // rounds * rounds
    if each < 2 * rounds:
        return []
    rates = []
    for i in range(stretches):
        ends = np.asarray(arrivals[i * each : (i + 1) * each + 1 : rounds])
        times = np.diff(ends)
        seconds = float(times.sum() - times.max() + np.median(times))
        rates.append(sum(sizes[i * each : (i + 1) * each]) / max(seconds, 1e-9))
    return rates


def growth_after_start(sampler: WorkerMemorySampler, before: set[int], start: int | None) -> dict[int, float]:
    """Return each new worker's USS growth (MB) from record ``start`` on: peak minus first
    reading; {} without 2 readings."""
    readings: dict[int, list[float]] = {}
    for r in sampler.records[start:] if start is not None else ():
        if r.role == "worker" and r.pid not in before:
            readings.setdefault(r.pid, []).append(r.uss_mb)
    return {pid: max(v) - v[0] for pid, v in readings.items() if len(v) >= 2}


class SpeedProbes(ProbeBase):
    """speed."""

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
        and the rest, spent waiting (sleep, disk, network); None when no sample can be fetched by index.
        Without /proc/self/schedstat (not Linux) the time queued counts as waiting."""
        indices = self.spread(most) if self.n and not self.key_problem and not self.iterable else []
        if not indices:
            return None
        wall = cpu = queued = 0.0
        k, deadline = len(indices), time.perf_counter() + seconds
        for j, index in enumerate(indices):
            t0, c0, q0 = time.perf_counter(), time.process_time(), _run_delay()
            self.dataset[index]
            wall, cpu = wall + time.perf_counter() - t0, cpu + time.process_time() - c0
            queued += _run_delay() - q0
            if time.perf_counter() > deadline:
                k = j + 1
                break
        waiting = max(0.0, wall - cpu - queued)
        return {
            "fetches": k,
            "cpu_ms": round(1000 * cpu / k, 2),
            "queued_ms": round(1000 * queued / k, 2),
            "waiting_ms": round(1000 * waiting / k, 2),
            "computes": cpu >= waiting,
        }

    def speed(self) -> None:
        cores, user = usable_cores(), self.loader.num_workers
        others = self.candidates(cores)
        figures = self.figures.setdefault("speed", {})
        fetch = figures["fetch"] = self.fetch_profile()  # predicts what other counts deliver
        batch_s = None
        if fetch is not None:
            figures["predicted_gain"] = {w: round(predicted_gain(fetch, w, user, cores), 2) for w in others}
            per_sample = (fetch["cpu_ms"] + fetch["queued_ms"] + fetch["waiting_ms"]) / 1000
            batch_s = per_sample * (self.loader.batch_size or 1)
        passes: dict[int, Pass] = {}
        growth: dict[int, float] = {}
        memory_at = max([w for w in others if w >= 2] or [user if user >= 2 else -1])
        counts = [user, *others]
        for k, w in enumerate(counts):
            if passes and (self.left() < 0.2 or w and self.left() <= self.startup_s + 0.5):
                figures["not_compared"] = f"num_workers={w}: time budget spent"
                break
            context = self.work.multiprocessing_context if w else None  # torch refuses one without workers
            copy = rebuild(
                self.work, num_workers=w, persistent_workers=False, multiprocessing_context=context
            )
            # the batches made during start-up wait in the buffer: 6 rounds more are timed
            batches = max(self.max_batches, self._buffered(w) + 6 * max(2, w))
            # the window: long enough for those batches at the predicted rate, within the budget left
            share = max(0.2, (self.left() - 0.5 - (len(counts) - k - 1) * self.startup_s) / (len(counts) - k))
            need = SPEED_S / len(counts)
            if batch_s is not None:  # the fewest batches a verdict needs: buffer + 3 stretches of 2 rounds
                gain = predicted_gain(fetch, w, 0, cores)  # type: ignore[arg-type]
                need = max(need, 1.5 * (self._buffered(w) + 6 * max(1, w)) * batch_s / gain)
            passes[w] = self._timed(copy, w, min(share, need), batches, growth if w == memory_at else None)
            if w and passes[w].waits_s:
                self.started(passes[w].waits_s[0])
            if w == user == 0 and not self.workers and self._cheap(passes[0]):
                break  # a batch this cheap gains nothing from workers: no worker is started
        figures["startup_s"] = round(self.startup_s, 2)
        self._speed_findings(passes, growth, user, cores)

    def _buffered(self, w: int) -> int:
        """Return how many batches ``w`` workers hold ready once started (1 without workers)."""
        return w * (self.loader.prefetch_factor or 2) if w else 1

    def _cheap(self, run: Pass) -> bool:
        """Return True when the batches of a 0-worker pass cost less than MATERIAL_MS to make (the
        median batch: a pause of a busy machine does not decide)."""
        return bool(run.waits_s) and 1000 * float(np.median(run.waits_s)) < MATERIAL_MS

    def _timed(
        self, copy: DataLoader, w: int, window: float, batches: int, growth: dict[int, float] | None
    ) -> Pass:
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

        run = timed_pass(
            copy, batches, window, self.step_s or None, read_memory, kill=True, before_stop=sampler.sample
        )
        self.memory_workers = w
        growth.update(growth_after_start(sampler, before, marks[0] if marks else None))
        return run

    def _speed_findings(
        self, passes: dict[int, Pass], growth: dict[int, float], user: int, cores: int
    ) -> None:
        stretches = {w: stretch_rates(p, self._buffered(w)) for w, p in passes.items()}
        rates = {w: float(np.median(stretches[w])) if stretches[w] else None for w in passes}
        run = passes[user]  # a batch's cost: from the steady rate, else the median wait
        rate = rates[user]
        cost_ms = (
            1000 * run.samples / max(1, run.batches) / rate
            if rate
            else 1000 * float(np.median(run.waits_s or [0.0]))
        )
        figures = self.figures.setdefault("speed", {})
        figures.update(
            {
                "cores": cores,
                "window_s": {w: round(p.seconds - p.first_batch_s, 2) for w, p in passes.items()},
                "samples_per_s": {w: round(r or 0, 1) for w, r in rates.items()},
                "first_batch_s": {w: round(p.first_batch_s, 2) for w, p in passes.items()},
                "batches": {w: p.batches for w, p in passes.items()},
                "batch_cost_ms": None if cost_ms is None else round(cost_ms, 2),
            }
        )
        if growth:
            mb = {str(k): round(v, 1) for k, v in growth.items()}
            self.figures["memory"] = {"worker_uss_growth_mb": mb}
            if max(growth.values()) >= 32:
                self.add(
                    "memory.worker_growth",
                    mb=round(max(growth.values()), 1),
                    batches=passes[self.memory_workers].batches,
                )
        if len(passes) == 1:
            cheap = f"a batch costs {cost_ms:.1f} ms to make here: workers cannot make it faster"
            figures["verdict"] = cheap if user == 0 and cost_ms < MATERIAL_MS else "nothing to compare"
            if figures["verdict"] != cheap:  # a candidate that could not be timed: what the profile predicts
                for other in figures.get("predicted_gain", {}):
                    self._predicted(
                        other,
                        user,
                        cores,
                        f"not measured: the time budget left no pass at num_workers={other}",
                    )
            return
        for w in passes:
            if w != user:
                self._compare(w, user, cores, passes, stretches, rates)

    def _compare(
        self,
        other: int,
        user: int,
        cores: int,
        passes: dict[int, Pass],
        stretches: dict[int, list[float]],
        rates: dict[int, float | None],
    ) -> None:
        """Add the finding of one measured comparison (another num_workers against the loader's)."""
        mine, theirs = rates[user], rates[other]
        if not mine or not theirs:
            self.figures["speed"]["verdict"] = "too few batches to tell a difference from noise"
            self._predicted(other, user, cores, "not measured: too few batches in the time budget")
            return
        fast, slow = (other, user) if theirs > mine else (user, other)
        beyond = bool(stretches[fast] and stretches[slow]) and min(stretches[fast]) > max(stretches[slow])
        ratio = max(mine, theirs) / min(mine, theirs)
        large = beyond and ratio >= LARGE
        window = self.figures["speed"]["window_s"][user]
        how = (
            f"measured: {theirs:.0f} against {mine:.0f} samples/s, medians of {len(stretches[user])} "
            f"stretches of a {window} s window, start-up excluded"
            + (", every stretch of the faster one ahead" if beyond else "")
        )
        self.figures["speed"].update(compared=other, speedup=round(theirs / mine, 2), beyond_noise=beyond)
        same: dict[str, Any] = dict(best=other, best_rate=theirs, rate=mine, workers=user, how=how)
        if user > cores:
            gain = round(mine / theirs, 2)
            fetch: dict[str, Any] = self.figures["speed"].get("fetch") or {}
            computes = bool(fetch.get("computes"))
            pays = mine >= LARGE * theirs and not computes
            if computes:
                gained = (
                    "gain only CPU time that other jobs on this machine would get"
                    if gain >= LARGE
                    else "gain nothing and each costs memory and start-up"
                )
                verdict = (
                    f"a fetch here is {fetch['cpu_ms']} ms of CPU and {fetch['waiting_ms']} ms of "
                    f"waiting: samples that compute cannot go faster than {cores} core(s), so the "
                    f"{user - other} extra workers {gained}"
                )
            elif pays:
                verdict = (
                    "the extra workers pay off (samples wait, on disk or network)"
                    if beyond
                    else "the extra workers seem to pay off, within noise"
                )
            elif fetch and not (theirs > mine and large):  # samples wait; no clear loss measured
                verdict = (
                    f"a fetch here is {fetch['cpu_ms']} ms of CPU and {fetch['waiting_ms']} ms of "
                    f"waiting: samples that wait can gain from workers beyond the cores; here the "
                    f"{user - other} extra workers gained {gain}x, within what a busy machine varies"
                )
            else:
                verdict = (
                    f"the {user - other} extra workers gain less than {LARGE}x here and each costs "
                    "memory and start-up"
                )
            waits = bool(fetch) and not computes and not (theirs > mine and large)
            advice = (
                "Keep them; samples that wait (not compute) gain from more workers than cores."
                if pays
                else "Keep them if your samples wait on storage; measure with a longer time budget."
                if waits
                else f"Use num_workers={other}: one worker per core is enough for samples that compute."
            )
            self.add(
                "speed.workers_over_cores",
                "info" if pays or waits else None,
                cores=cores,
                ratio=gain,
                verdict=verdict,
                advice=advice,
                **same,
            )
        elif other > user and theirs > mine and large:
            advice = f"Use num_workers={other} (and measure again with your training step, step_s)."
            self.add("speed.more_workers", speedup=round(theirs / mine, 1), advice=advice, **same)
        elif (
            other > user
            and not self._predicted(other, user, cores, f"measured {theirs / mine:.2f}x, {how}", mine, theirs)
            and theirs > mine
        ):
            advice = "Keep yours: the difference is within what a busy machine varies."
            self.add("speed.more_workers", "info", speedup=round(theirs / mine, 1), advice=advice, **same)
        elif other < user and theirs > mine and large:
            self.add("speed.workers_slower", speedup=round(theirs / mine, 1), **same)

    def _predicted(
        self,
        other: int,
        user: int,
        cores: int,
        measured: str,
        mine: float | None = None,
        theirs: float | None = None,
    ) -> bool:
        """Add the finding that a fetch's profile predicts when no measurement settled it: a loader
        whose samples wait gains from ``other`` > ``user`` workers; more workers than cores on samples
        that compute gain nothing. Return True when a finding was added."""
        fetch = self.figures["speed"].get("fetch")
        gain = self.figures["speed"].get("predicted_gain", {}).get(other)
        if fetch is None or gain is None:
            if user > cores:  # torch's warning alone, as a note
                self.add(
                    "speed.workers_over_cores",
                    "info",
                    workers=user,
                    cores=cores,
                    rate=mine or 0,
                    best_rate=theirs or 0,
                    best=other,
                    ratio="?",
                    how=measured,
                    advice="Measure with a longer time budget.",
                    verdict="not predicted either (no sample could be fetched by index)",
                )
                return True
            return False
        profile = (
            f"predicted from {fetch['fetches']} fetches here: {fetch['cpu_ms']} ms of CPU and "
            f"{fetch['waiting_ms']} ms of waiting per sample; {measured}"
        )
        per_batch_ms = (fetch["cpu_ms"] + fetch["waiting_ms"]) * (self.loader.batch_size or 1)
        if other > user and gain >= LARGE and not fetch["computes"] and per_batch_ms >= MATERIAL_MS:
            self.add(
                "speed.more_workers",
                best=other,
                best_rate=(mine or 0) * gain,
                rate=mine or 0,
                workers=user,
                speedup=round(gain, 1),
                how=profile,
                advice=f"Use num_workers={other}: samples that wait gain from workers even on few cores "
                "(measure again with your training step, step_s).",
            )
            return True
        if user > cores and other < user:
            computes = fetch["computes"]
            startup = self.figures["speed"].get("startup_s") or self.startup_s
            verdict = (
                f"samples that compute cannot go faster than {cores} core(s): the {user - other} "
                f"extra workers gain nothing and each costs memory and start-up ({startup:.1f} s to "
                "the first batch here)"
                if computes
                else "samples that wait gain from workers beyond the cores"
            )
            self.add(
                "speed.workers_over_cores",
                None if computes else "info",
                workers=user,
                cores=cores,
                rate=mine or 0,
                best_rate=theirs or 0,
                best=other,
                ratio=round(1 / gain, 2),
                how=profile,
                verdict=verdict,
                advice=f"Use num_workers={other}: one worker per core is enough for samples that compute."
                if computes
                else "Keep them.",
            )
            return True
        return False
