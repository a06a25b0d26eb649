"""The instruments must measure what they claim; each test fails for a broken instrument."""

from __future__ import annotations

import os
import time

import numpy as np
import psutil
import pytest
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

import loaderlab
from loaderlab.datasets import LatencyDataset
from loaderlab.loaders import same_batches
from loaderlab.measure import WorkerMemorySampler, live_workers, throughput, trace_timeline


class AllocatingDataset(Dataset):
    """Each worker allocates (and touches) `mb` megabytes on its first sample, then holds it.

    It waits `settle_s` first, so a sampler reads the worker's size before the allocation: in
    CI, on a busy machine, the first reading once came mid-allocation and saw 137 of 200 MB grow.
    """

    def __init__(self, mb: int, n: int = 8, hold_s: float = 0.05, settle_s: float = 0.5) -> None:
        self.mb, self.n, self.hold_s, self.settle_s = mb, n, hold_s, settle_s
        self.ballast = None

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        if self.ballast is None:
            time.sleep(self.settle_s)
            self.ballast = np.ones(self.mb * 2**20 // 8)
        time.sleep(self.hold_s)
        return torch.tensor(i)


class Counting(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        start, step = (info.id, info.num_workers) if info else (0, 1)
        yield from range(start, 40, step)


@pytest.mark.course
def test_throughput_counts_every_sample_and_batch(no_leaked_workers):
    loader = DataLoader(LatencyDataset(n=50, latency_s=0), batch_size=8)
    result = throughput(loader)
    assert (result.batches, result.samples) == (7, 50)
    assert len(result.waits_s) == 7 and result.first_batch_s == result.received_s[0] >= result.waits_s[0]
    assert result.samples_per_s == pytest.approx(50 / result.seconds)
    assert result.wait_fraction == pytest.approx(sum(result.waits_s) / result.seconds)
    assert result.finished and result.sizes == [8] * 6 + [2]


@pytest.mark.course
def test_throughput_stops_at_max_batches_and_runs_the_step(no_leaked_workers):
    seen = []
    loader = DataLoader(LatencyDataset(n=64, latency_s=0), batch_size=4, num_workers=2)
    result = throughput(loader, max_batches=3, step=seen.append)
    assert result.batches == 3 and len(seen) == 3


@pytest.mark.course
@pytest.mark.timing
def test_latency_dataset_throughput_grows_3x_from_0_to_4_workers(no_leaked_workers):
    # steady rates: the workers' start-up (tens of ms idle, far more on a loaded machine) is not
    # what grows with the number of workers; the sleeps overlap whatever else runs
    dataset = LatencyDataset(n=192, latency_s=0.020)
    serial = throughput(DataLoader(dataset, batch_size=8, num_workers=0)).steady_samples_per_s
    with pytest.warns(UserWarning, match="suggested max number of worker"):
        parallel = throughput(DataLoader(dataset, batch_size=8, num_workers=4)).steady_samples_per_s
    assert parallel >= 3 * serial, f"4 workers gave {parallel / serial:.2f}x"


@pytest.mark.course
def test_memory_sampler_sees_a_worker_allocating_200_mb(no_leaked_workers):
    loader = DataLoader(AllocatingDataset(mb=200), batch_size=2, num_workers=1)
    with WorkerMemorySampler(interval_s=0.02) as sampler:
        throughput(loader)
    growth = sampler.worker_uss_growth_mb()
    peaks = sampler.peak_uss_by_worker()
    assert len(peaks) == 1, "exactly one worker should have been sampled"
    assert max(peaks.values()) >= 180, f"worker peak USS {peaks}"
    assert max(growth.values()) >= 150, f"worker USS growth {growth}"
    # The main process did not allocate: its RSS stays put. (Its USS does not: while a forked
    # worker shares the parent's pages, those pages are no longer "unique" to the parent.)
    main = [r for r in sampler.records if r.role == "main"]
    assert main and max(r.rss_mb for r in main) - min(r.rss_mb for r in main) < 100
    if os.path.exists("/proc/self/smaps_rollup"):
        assert sampler.peak_total_pss_mb() >= 180  # the worker's 200 MB are its own: all in its PSS


@pytest.mark.course
def test_memory_sampler_without_workers_records_only_main():
    with WorkerMemorySampler(interval_s=0.01) as sampler:
        throughput(DataLoader(LatencyDataset(n=8, latency_s=0.005), batch_size=2))
    assert sampler.worker_pids() == [] and {r.role for r in sampler.records} == {"main"}


@pytest.mark.course
def test_tracer_attributes_batches_to_distinct_workers(no_leaked_workers):
    loader = DataLoader(LatencyDataset(n=48, latency_s=0.002), batch_size=4, num_workers=2)
    timeline = trace_timeline(loader, step=0.005)
    assert timeline.batches_per_worker() == {0: 6, 1: 6}
    pids = {r["pid"] for r in timeline.records}
    assert len(pids) == 2 and os.getpid() not in pids
    assert [r["worker"] for r in timeline.records[:4]] == [0, 1, 0, 1]
    for r in timeline.records:
        assert r["start"] <= r["end"] and r["requested"] <= r["received"] <= r["step_end"]
        assert r["wait"] == pytest.approx(r["received"] - r["requested"])


@pytest.mark.course
def test_tracer_in_main_process_and_for_iterable_datasets(no_leaked_workers):
    timeline = trace_timeline(DataLoader(LatencyDataset(n=10, latency_s=0), batch_size=5))
    assert timeline.batches_per_worker() == {-1: 2}
    timeline = trace_timeline(DataLoader(Counting(), batch_size=5, num_workers=2))
    assert timeline.batches_per_worker() == {0: 4, 1: 4}


@pytest.mark.course
def test_tracer_yields_the_same_batches_as_the_loader(no_leaked_workers):
    def make():
        g = torch.Generator().manual_seed(3)
        return DataLoader(
            LatencyDataset(n=30, latency_s=0), batch_size=4, shuffle=True, generator=g, num_workers=2
        )

    captured = []
    trace_timeline(make(), step=captured.append)
    assert same_batches(captured, make())


def test_tracer_lets_worker_init_fn_reach_the_users_dataset(no_leaked_workers):
    class Tagged(Dataset):
        tag = "parent"

        def __len__(self):
            return 4

        def __getitem__(self, i):
            return self.tag

    def init(worker_id):
        get_worker_info().dataset.tag = f"worker{worker_id}"

    captured = []
    trace_timeline(
        DataLoader(Tagged(), batch_size=2, num_workers=1, worker_init_fn=init), step=captured.append
    )
    assert captured == [["worker0", "worker0"], ["worker0", "worker0"]]


def cpu_seconds(run) -> float:
    start = time.process_time()
    run()
    return time.process_time() - start


@pytest.mark.course
@pytest.mark.timing
def test_tracer_overhead_is_under_5_percent_on_the_latency_dataset():
    """The tracer's extra work is CPU time in this process (num_workers=0), so it is compared in
    CPU time: waiting for a busy core stretches the epochs' wall time, not their CPU time. Margin:
    the extra CPU must stay under 5 % of the epoch's 0.256 s of reads (12.8 ms for 8 batches)."""
    loader = DataLoader(LatencyDataset(n=64, latency_s=0.004), batch_size=8)
    plain = min(cpu_seconds(lambda: throughput(loader)) for _ in range(5))
    traced = min(cpu_seconds(lambda: trace_timeline(loader)) for _ in range(5))
    reads = len(loader.dataset) * loader.dataset.latency_s
    assert traced - plain < 0.05 * reads, f"traced {traced * 1e3:.1f} ms of CPU vs {plain * 1e3:.1f} ms"


@pytest.mark.course
def test_live_workers_counts_workers_and_sees_them_exit():
    loader = DataLoader(LatencyDataset(n=16, latency_s=0), batch_size=2, num_workers=2)
    it = iter(loader)
    next(it)
    assert len(live_workers()) == 2
    del it
    assert loaderlab.wait_for_workers_to_exit(10.0) == 0


@pytest.mark.parametrize(
    "call, error, word",
    [
        (lambda: throughput([1, 2, 3]), TypeError, "loader"),
        (lambda: throughput(DataLoader(LatencyDataset(4, 0)), max_batches=0), ValueError, "max_batches"),
        (lambda: throughput(DataLoader(LatencyDataset(4, 0)), step=-1), ValueError, "step"),
        (lambda: throughput(DataLoader(LatencyDataset(4, 0)), step="fast"), TypeError, "step"),
        (lambda: throughput(DataLoader([], batch_size=2)), ValueError, "no batches"),
        (lambda: trace_timeline("loader"), TypeError, "loader"),
        (lambda: WorkerMemorySampler(interval_s=-0.1), ValueError, "interval_s"),
        (lambda: LatencyDataset(n=4, latency_s=-0.01), ValueError, "latency_s"),
        (lambda: LatencyDataset(n=0), ValueError, "n"),
        (lambda: LatencyDataset(n=4, latency_s="1"), TypeError, "latency_s"),
    ],
)
def test_instruments_reject_nonsense_with_a_message_naming_the_argument(call, error, word):
    with pytest.raises(error, match=word):
        call()


@pytest.mark.course
def test_live_workers_sees_forkserver_workers_but_not_the_forkserver():
    loader = DataLoader(
        LatencyDataset(n=16, latency_s=0), batch_size=2, num_workers=2, multiprocessing_context="forkserver"
    )
    it = iter(loader)
    next(it)
    assert len(live_workers()) == 2
    del it
    assert loaderlab.wait_for_workers_to_exit(10.0) == 0


# ------------------------------------------------------------- Tracer: the notebook's own loop


def _watched_loop(tracer: loaderlab.Tracer) -> list[int]:
    """The loop notebook 03 writes, over 8 batches of 4 samples that take 4 x 5 ms each."""
    loader = DataLoader(
        LatencyDataset(n=32, latency_s=0.005), batch_size=4, num_workers=2, collate_fn=tracer.collate
    )
    seen = []
    for xb, _yb in tracer.watch(loader):
        seen.append(len(xb))
        time.sleep(0.01)  # the training step
    return seen


@pytest.mark.course
def test_tracer_watches_the_loop_the_notebook_writes(no_leaked_workers):
    tracer = loaderlab.Tracer()
    assert _watched_loop(tracer) == [4] * 8  # the loop gets plain batches, not the tracer's tags
    run = tracer.throughput
    assert run.batches == 8 and run.samples == 32
    assert run.wait_s + run.step_s <= run.seconds + 1e-6
    timeline = tracer.timeline
    assert timeline.batches_per_worker() == {0: 4, 1: 4}
    for r in timeline.records:
        assert r["start"] <= r["end"] <= r["received"] + 1e-3  # a batch is made before it arrives


@pytest.mark.course
@pytest.mark.timing
def test_tracer_times_the_steps_and_the_typical_batch_of_that_loop(no_leaked_workers):
    tracer = loaderlab.Tracer()
    _watched_loop(tracer)
    # 8 sleeps of 10 ms; ±40 ms for oversleeping
    assert tracer.throughput.step_s == pytest.approx(0.08, abs=0.04)
    # a batch takes 4 x 5 ms to fetch: the typical bar is that long, not the first (start-up)
    assert 0.018 <= tracer.timeline.typical_load_s < 0.06  # 20 ms: 2 ms clock slack below, 3x above


@pytest.mark.course
@pytest.mark.timing
def test_tracer_timeline_shows_idle_workers_waiting_for_indices(no_leaked_workers):
    # fast loading, slow step: after the first 2 x 2 batches, a worker starts a batch only when
    # the main process has taken one and sent a new index, so bars begin after a receipt
    tracer = loaderlab.Tracer()
    loader = DataLoader(
        LatencyDataset(n=40, latency_s=0.001),
        batch_size=2,
        num_workers=2,
        prefetch_factor=2,
        collate_fn=tracer.collate,
    )
    for _ in tracer.watch(loader):
        time.sleep(0.03)
    records = tracer.timeline.records
    for k in range(4, len(records)):
        assert records[k]["start"] >= records[k - 4]["received"]
        assert records[k]["end"] - records[k]["start"] < 0.025  # the bar is the fetch, not the idle wait


@pytest.mark.course
def test_tracer_without_its_collate_still_times_and_explains_the_timeline(no_leaked_workers):
    tracer = loaderlab.Tracer()
    for _ in tracer.watch(DataLoader(LatencyDataset(n=8, latency_s=0), batch_size=4)):
        pass
    assert tracer.throughput.batches == 2
    with pytest.raises(ValueError, match="collate_fn=tracer.collate"):
        _ = tracer.timeline
    with pytest.raises(ValueError, match="loop over tracer.watch"):
        _ = loaderlab.Tracer().throughput
    with pytest.raises(TypeError, match="iterable"):
        loaderlab.Tracer().watch(3)


@pytest.mark.course
def test_tracer_stops_workers_when_the_loop_breaks_early(no_leaked_workers):
    tracer = loaderlab.Tracer()
    loader = DataLoader(
        LatencyDataset(n=64, latency_s=0.001),
        batch_size=2,
        num_workers=2,
        collate_fn=tracer.collate_with(lambda samples: len(samples)),
    )
    for i, size in enumerate(tracer.watch(loader)):
        assert size == 2
        if i == 2:
            break
    assert tracer.throughput.batches == 3 and len(tracer.timeline.records) == 3
    assert loaderlab.wait_for_workers_to_exit(5) == 0


def _cpu_s(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


@pytest.mark.course
@pytest.mark.timing
def test_others_cpu_counts_a_busy_program_outside_this_process_tree_but_not_our_workers(tmp_path):
    """Each busy program's own CPU time is the yardstick, so the test holds on a saturated machine."""
    import subprocess
    import sys

    pid_file = tmp_path / "pid"
    busy = [
        sys.executable,
        "-c",
        "import os, sys, time\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "end = time.time() + 3\nwhile time.time() < end: pass",
    ]

    def machine_busy() -> float:
        t = psutil.cpu_times()
        return t.user + t.nice + t.system + t.irq + t.softirq

    def measure(pid: int) -> tuple[float, float, float]:
        """(others.cores, the busy program's cores, the machine's busy cores) over one second."""
        before, machine = _cpu_s(pid), machine_busy()
        with loaderlab.OthersCpu() as others:
            time.sleep(1.0)
        # the busy loop outlives the block by ~1.5 s
        return others.cores, _cpu_s(pid) - before, machine_busy() - machine

    def wait_for_pid() -> int:
        deadline = time.monotonic() + 10
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the busy program never started"
            time.sleep(0.05)
        pid = int(pid_file.read_text())
        pid_file.unlink()
        return pid

    ours = subprocess.Popen(busy)  # our child: its CPU is ours
    others, child, machine = measure(wait_for_pid())
    ours.wait()
    if child < 0.3:
        pytest.skip(f"the machine was too busy to give the child a core ({child:.2f})")
    # other tests may load the machine too; a meter that counted our child would report
    # (almost) the whole machine's busy time as someone else's
    assert others < machine - child + 0.15, (others, child, machine)

    subprocess.run(["setsid", "-f", *busy], check=True)  # detached: another program's CPU
    pid = wait_for_pid()
    others, detached, _ = measure(pid)
    if detached < 0.3:
        pytest.skip(f"the machine was too busy to give the program a core ({detached:.2f})")
    assert others > detached - 0.15, (others, detached)
    while psutil.pid_exists(pid):  # let the detached loop end
        time.sleep(0.1)


@pytest.mark.course
def test_others_cpu_stop_refuses_before_start_and_returns_what_it_sets():
    # the measurement itself: the test above (the with block calls start() and stop())
    others = loaderlab.OthersCpu()
    with pytest.raises(RuntimeError, match="needs a start"):
        others.stop()
    assert others.start() is others
    time.sleep(0.2)
    assert others.stop() == others.cores
