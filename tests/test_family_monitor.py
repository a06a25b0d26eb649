"""loaderlab.measure.family.FamilyMonitor: the peak memory of a process family (the notebook
budgets in conftest.py, the recorder's peak MB). Reading a process's PSS costs the kernel a walk
over all its mappings (2.6 ms for one that imported torch), its RSS almost nothing: the monitor
reads the PSS only when the summed RSS, an upper bound of it, could beat the peak."""

from __future__ import annotations

import os
from types import SimpleNamespace

from loaderlab.measure import family

MB = 2**20


class Process:
    """A stand-in psutil.Process whose memory is what the test sets, counting PSS readings."""

    def __init__(self, rss_mb: float, pss_mb: float) -> None:
        self.rss, self.pss, self.pss_reads = rss_mb * MB, pss_mb * MB, 0

    def memory_info(self):
        return SimpleNamespace(rss=self.rss)

    def memory_full_info(self):
        self.pss_reads += 1
        return SimpleNamespace(rss=self.rss, pss=self.pss)


def test_the_peak_is_every_readings_highest_pss_and_pss_is_read_only_when_it_could_be_higher(monkeypatch):
    monitor = family.FamilyMonitor(os.getpid(), interval_s=3600)
    monitor.stop()
    monitor.peak_mb = 0.0
    kernel, worker = Process(360, 300), Process(350, 80)  # a forked worker shares most of its pages
    readings = [[kernel], [kernel, worker], [kernel], [kernel], [kernel, worker]]
    monkeypatch.setattr(family, "_family", lambda root: readings.pop(0))
    peaks = []
    for _ in range(5):
        monitor.read()
        peaks.append(monitor.peak_mb)
    assert peaks == [300, 380, 380, 380, 380]  # PSS: 300, 300 + 80, then never above 380
    # PSS read in the readings whose RSS could beat the peak: the first (360 > 0), the first with
    # the worker (710 > 300) and the last (710 > 380); not the kernel alone after (360 <= 380)
    assert (kernel.pss_reads, worker.pss_reads) == (3, 2)
