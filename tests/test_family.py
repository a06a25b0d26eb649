"""loaderlab.measure.family.FamilyCpu: the CPU a process family used, each process counted once.

The recorder (tools/record.py) and ``loaderlab.OthersCpu`` subtract it from the machine's busy
time to tell the others' CPU use from ours: a process of ours that the count misses is taken for
someone else's, and a quiet machine looks busy (notebook 15's bounded children did that).
The processes burn CPU seconds, not wall seconds, so a busy machine only makes them slower.
"""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from loaderlab.measure.family import FamilyCpu

pytestmark = pytest.mark.course  # real processes

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"

# a child that starts a grandchild burning CPU, waits a little, then exits without waiting for it:
# init adopts the grandchild and reaps it, so none of our processes' times ever hold its CPU
ORPHAN = f"""
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", {BURN.format(s=0.6)!r}])
time.sleep(0.5)
"""


def _follow_until_gone(pid: int, cpu: FamilyCpu, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, f"process {pid} still running after {timeout_s:g} s"
        cpu.sample()
        time.sleep(0.05)


def test_a_child_that_exits_between_two_readings_counts_once():
    cpu = FamilyCpu(psutil.Process())
    subprocess.run([sys.executable, "-c", BURN.format(s=0.5)], check=True)  # reaped: in our times
    used = cpu.sample()
    assert 0.5 <= used < 0.5 + 1.5  # the burn, plus an interpreter's start-up, counted once


def test_a_grandchild_adopted_by_init_is_followed_after_its_parent_exits():
    cpu = FamilyCpu(psutil.Process())
    child = subprocess.Popen([sys.executable, "-c", ORPHAN])
    deadline = time.monotonic() + 60
    kids: list[psutil.Process] = []
    while not kids:  # the child lives 0.5 s after starting it
        assert child.poll() is None and time.monotonic() < deadline, "the grandchild was never seen"
        cpu.sample()
        kids = psutil.Process(child.pid).children()
    _follow_until_gone(kids[0].pid, cpu)  # the child exits; the grandchild burns on, adopted by init
    child.wait()
    assert cpu.sample() >= 0.6 * 0.8  # its burn, less what it used after the last reading
