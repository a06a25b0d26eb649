"""Notebook 18's snippet: loader_limits.py names the limit that binds a loader, and
workers_to_keep_up asks for enough workers; checked against a real loader over notebook 18's
own dataset (notebooks/lesson18_samples.py)."""

from __future__ import annotations

import math
import statistics
import time

import pytest
from course_code import lesson, snippet
from torch.utils.data import DataLoader

pytestmark = pytest.mark.usefixtures("no_leaked_workers")


def test_loader_limits_names_the_smallest_limit():
    limits, binds = snippet("loader_limits").loader_limits(2, 0.010, 0.001, 16, 0.020, free_cores=2)
    assert binds == "workers" and limits == pytest.approx({"workers": 200, "free cores": 2000, "step": 800})
    limits, binds = snippet("loader_limits").loader_limits(8, 0.004, 0.004, 16, 0.020, free_cores=2)
    assert binds == "free cores" and limits["free cores"] == pytest.approx(500)
    limits, binds = snippet("loader_limits").loader_limits(4, 0.0, 0.0, 64, 0.0)
    assert binds == "workers" and math.isinf(limits["workers"])  # no cost at all: nothing binds


@pytest.mark.course
@pytest.mark.timing
def test_workers_to_keep_up_keeps_a_real_loop_from_waiting():
    module = snippet("loader_limits")
    # 20 ms a batch, 12 ms a step
    workers = module.workers_to_keep_up(sample_s=0.005, batch_size=4, step_s=0.012)
    assert workers == 2
    # reads only: no core needed
    dataset = lesson("lesson18_samples").SyntheticSamples(n=64, cpu_ms=0.0, io_ms=5.0)
    waited = {}
    for n in (1, workers):
        loader = DataLoader(dataset, batch_size=4, num_workers=n)
        waits, t = [], time.perf_counter()
        for k, _batch in enumerate(loader):
            if k >= n:  # each worker's first batch carries its start-up
                waits.append(time.perf_counter() - t)
            time.sleep(0.012)  # the step
            t = time.perf_counter()
        waited[n] = statistics.median(waits)
    # One worker waits about 8 ms a batch, two about none. Margin: the median batch, since on a busy
    # machine a few late wake-ups add up to a sum of waits that two workers cannot hide.
    shown = f"median wait {waited[workers] * 1e3:.1f} ms ({workers} workers), {waited[1] * 1e3:.1f} ms (1)"
    assert waited[workers] < 0.5 * waited[1], shown
