"""Written by notebook 18, section 2: settings, the DataLoader they make, a bounded run, a simple model."""

import math
import time
from dataclasses import dataclass

import torch
from lesson18_samples import SyntheticSamples
from torch.utils.data import DataLoader

import loaderlab


@dataclass(frozen=True)
class Settings:
    """The playground's knobs: what a sample costs, how the DataLoader loads, how long a step takes."""

    cpu_ms: float = 4.0  # CPU time per sample (a decode)
    io_ms: float = 0.0  # wait per sample (a read; the CPU stays free)
    slow_rate: float = 0.0  # share of samples that wait SLOW_MS more
    batch_size: int = 16
    num_workers: int = 2
    prefetch_factor: int = 2
    persistent_workers: bool = True
    pin_memory: bool = False
    step_ms: float = 20.0  # the training step
    in_order: bool = True


SLOW_MS = 250.0
PRESETS = {
    "CPU-bound decode": Settings(cpu_ms=4.0, io_ms=0.0, batch_size=16, num_workers=2, step_ms=20.0),
    "slow network reads": Settings(cpu_ms=0.2, io_ms=20.0, batch_size=16, num_workers=2, step_ms=20.0),
    "spiky reads": Settings(cpu_ms=0.5, io_ms=2.0, slow_rate=0.05, batch_size=8, num_workers=2, step_ms=20.0),
    "in-memory tensors": Settings(cpu_ms=0.0, io_ms=0.0, batch_size=64, num_workers=0, step_ms=20.0),
}


def loader_call(s: Settings) -> str:
    """The DataLoader(...) call these settings make, to copy into your code."""
    args = [f"batch_size={s.batch_size}", f"num_workers={s.num_workers}"]
    if s.num_workers > 0:
        args += [f"prefetch_factor={s.prefetch_factor}", f"persistent_workers={s.persistent_workers}"]
        args += [] if s.in_order else ["in_order=False"]
    args += ["pin_memory=True"] if s.pin_memory else []
    return f"DataLoader(dataset, {', '.join(args)})"


def build_loader(s: Settings, collate_fn, batches_per_epoch: int = 8) -> DataLoader:
    """The DataLoader of the settings over a SyntheticSamples epoch of batches_per_epoch batches."""
    dataset = SyntheticSamples(s.batch_size * batches_per_epoch, s.cpu_ms, s.io_ms, s.slow_rate, SLOW_MS)
    workers = s.num_workers > 0
    return DataLoader(dataset, batch_size=s.batch_size, num_workers=s.num_workers, collate_fn=collate_fn,
                      prefetch_factor=s.prefetch_factor if workers else None,  # None without workers
                      persistent_workers=s.persistent_workers and workers,
                      pin_memory=s.pin_memory and torch.accelerator.is_available(),  # no accelerator: no-op
                      in_order=s.in_order)


def run(s: Settings, seconds: float = 1.5, on_progress=None) -> dict:
    """Loop over epochs of the settings' loader, each step a sleep of step_ms, until `seconds` after the
    first batch; return the timeline, memory readings, and the cores other programs used from then on and
    those they left free, on the CPUs this process may use."""
    tracer = loaderlab.Tracer()
    loader = build_loader(s, tracer.collate)
    others = loaderlab.OthersCpu(usable_only=True)  # from the first batch on, on the CPUs we may use
    epochs, start, first = [], time.perf_counter(), None
    try:
        with loaderlab.WorkerMemorySampler(interval_s=0.25) as memory:
            while first is None or time.perf_counter() - first < seconds:
                offset = time.perf_counter() - start
                for _batch in tracer.watch(loader):  # the batches: (xb, yb)
                    if first is None:
                        first = time.perf_counter()
                        others.start()
                    time.sleep(s.step_ms / 1000)  # the training step
                    if on_progress is not None:
                        on_progress(min(1.0, (time.perf_counter() - first) / seconds))
                    if time.perf_counter() - first >= seconds:
                        break  # mid-epoch: the time is up
                epochs.append((offset, tracer.timeline))
            others.stop()
        if on_progress is not None:
            on_progress(1.0)  # done: the time may run out between two epochs, after the last report
    finally:
        del tracer, loader  # persistent workers stop with their loader
    return {"settings": s, "timeline": merge(epochs), "memory": memory.records, "others_cores": others.cores,
            "free_cores": others.free}


def merge(epochs: list) -> loaderlab.Timeline:
    """One Timeline of several epochs' timelines, each shifted by its epoch's start (seconds)."""
    records = []
    for offset, timeline in epochs:
        for r in timeline.records:
            moved = {k: r[k] + offset for k in ("start", "end", "requested", "received", "step_end")}
            records.append({**r, **moved, "batch": len(records)})
    offset, last = epochs[-1]
    return loaderlab.Timeline(records, offset + last.epoch_s)


def measured(result: dict) -> dict:
    """Samples/s after the first batch, the first batch's wait, and the share of the loop spent waiting."""
    records, s = result["timeline"].records, result["settings"]
    after_first = records[-1]["step_end"] - records[0]["received"]
    wait = sum(r["wait"] for r in records[1:])
    step = sum(r["step_end"] - r["received"] for r in records[1:])
    return {"samples_per_s": (len(records) - 1) * s.batch_size / after_first if len(records) > 1 else 0.0,
            "first_batch_s": records[0]["received"],
            "wait_share": wait / (wait + step) if wait + step else 0.0}


def sample_ms(s: Settings) -> float:
    """What one sample costs one process on average (ms): its read, its decode, its share of slow reads."""
    return s.io_ms + s.slow_rate * SLOW_MS + s.cpu_ms


def predict(s: Settings, free_cores: float) -> dict:
    """Samples/s a simple model expects, each limit's samples/s, the one that binds, and the share of
    the loop it expects to wait: min(workers / time per sample, free cores / CPU per sample, batch / step)."""
    per_sample_ms = sample_ms(s)
    step_rate = 1000 * s.batch_size / s.step_ms if s.step_ms else math.inf
    if s.num_workers == 0:  # the main process reads a batch, then steps: the times add up
        rate = 1000 / (per_sample_ms + s.step_ms / s.batch_size) if per_sample_ms or s.step_ms else math.inf
        limits = {"main process (read, then step)": rate}
    else:
        limits = {"workers": 1000 * s.num_workers / per_sample_ms if per_sample_ms else math.inf,
                  "free cores": 1000 * free_cores / s.cpu_ms if s.cpu_ms else math.inf,
                  "step": step_rate}
    binds = min(limits, key=limits.get)
    rate = limits[binds]
    # the loop waits whenever batches come slower than it steps (no step at all: it only waits)
    wait_share = 1 - min(1.0, rate / step_rate) if step_rate < math.inf else float(rate < math.inf)
    return {"samples_per_s": rate, "limits": limits, "binds": binds, "wait_share": wait_share}


def ideal(s: Settings, free_cores: float) -> float:
    """Samples/s enough workers could reach on the free cores: the decode shares the cores, the
    waits do not, and the step caps it."""
    cores = 1000 * free_cores / s.cpu_ms if s.cpu_ms else math.inf
    return min(cores, 1000 * s.batch_size / s.step_ms if s.step_ms else math.inf)
