"""One answer to "is this multiprocessing's helper process?" (loaderlab.processes)."""

from __future__ import annotations

import subprocess
import sys

import psutil
import pytest

from loaderlab.processes import is_multiprocessing_helper, kill_tree


class FakeProcess:
    def __init__(self, ppid: int, cmdline: list[str], error: Exception | None = None) -> None:
        self._ppid, self._cmdline, self._error = ppid, cmdline, error

    def ppid(self) -> int:
        if self._error:
            raise self._error
        return self._ppid

    def cmdline(self) -> list[str]:
        return self._cmdline


TRACKER = ["python", "-c", "from multiprocessing.resource_tracker import main;main(5)"]
FORKSERVER = ["python", "-c", "from multiprocessing.forkserver import main; main(8, 9)"]


def test_the_tracker_and_forkserver_of_this_process_are_helpers():
    assert is_multiprocessing_helper(FakeProcess(10, TRACKER), 10)
    assert is_multiprocessing_helper(FakeProcess(10, FORKSERVER), 10)


def test_a_worker_is_no_helper_even_when_forked_by_the_forkserver():
    assert not is_multiprocessing_helper(FakeProcess(10, ["python", "-m", "ipykernel_launcher"]), 10)
    assert not is_multiprocessing_helper(FakeProcess(11, FORKSERVER), 10)  # the forkserver's child


def test_a_process_that_is_gone_counts_as_no_live_worker():
    assert is_multiprocessing_helper(FakeProcess(10, TRACKER, psutil.NoSuchProcess(123)), 10)
    assert is_multiprocessing_helper(FakeProcess(10, TRACKER, psutil.AccessDenied(123)), 10)


@pytest.mark.course  # starts two Python processes
def test_kill_tree_also_kills_processes_seen_earlier_outside_the_tree():
    """The grader passes the kernel's children it saw (``also``): one that left the kernel's group
    and tree dies with it."""
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    leader = subprocess.Popen(sleep, start_new_session=True)
    outsider = subprocess.Popen(sleep, start_new_session=True)  # neither its child nor in its group
    try:
        kill_tree(leader.pid, also=[psutil.Process(outsider.pid)])
        assert leader.wait(timeout=5) and outsider.wait(timeout=5)  # both killed (a nonzero status)
    finally:
        for proc in (leader, outsider):
            proc.kill()
            proc.wait()
