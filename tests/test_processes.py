"""One answer to "is this multiprocessing's helper process?" (loaderlab.processes)."""

from __future__ import annotations

import psutil

from loaderlab.processes import is_multiprocessing_helper


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
