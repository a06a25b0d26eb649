"""What runs where POSIX calls do not exist (Windows), exercised here with the attributes removed:
loaderlab.bounded stops a child and its descendants without process groups and without asking
for a stack (no SIGUSR1); loaderlab.failures kills a worker without SIGKILL and says in one
sentence that stack dumps need SIGUSR1. tests/test_posix_guards.py finds unguarded uses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from loaderlab import bounded, failures, processes

SPAWNS_A_GRANDCHILD = (
    "import subprocess, sys, time; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
)


def _without(monkeypatch, module, *names: str) -> None:
    for name in names:
        monkeypatch.delattr(module, name, raising=False)


def _family(pid: int) -> list[psutil.Process]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        children = psutil.Process(pid).children(recursive=True)
        if children:
            return [psutil.Process(pid), *children]
        time.sleep(0.05)
    raise AssertionError("the grandchild did not start within 20 s")


def test_kill_family_without_process_groups_kills_the_child_and_its_descendants(monkeypatch):
    _without(monkeypatch, os, "killpg", "getpgid")
    child = subprocess.Popen([sys.executable, "-c", SPAWNS_A_GRANDCHILD])
    try:
        family = _family(child.pid)
        assert processes.group_members(child.pid) == [family[1].pid]  # its running descendants
        processes.kill_tree(child.pid)
        child.wait(timeout=10)
        assert not [p for p in family if processes.running(p)]
    finally:
        child.kill()
        child.wait()


@pytest.mark.course
@pytest.mark.timing
def test_an_overrunning_child_is_stopped_without_sigusr1(monkeypatch):
    _without(monkeypatch, signal, "SIGUSR1")
    _without(monkeypatch, os, "killpg", "getpgid")
    start = time.monotonic()
    report = bounded.run_bounded(time.sleep, 60, bound_s=1.0, start_method=None).report()
    assert report.overran and report.stuck_at == []  # no stack: there is no signal to ask for it
    assert time.monotonic() - start < 15


def test_a_killed_worker_gets_sigterm_where_there_is_no_sigkill(monkeypatch):
    _without(monkeypatch, signal, "SIGKILL")
    sent = []
    monkeypatch.setattr(failures.os, "kill", lambda pid, signum: sent.append((pid, signum)))
    monkeypatch.setattr(failures, "get_worker_info", lambda: object())  # as in a worker
    dataset = failures.CrashingDataset(n=4, fail_at=1, mode="kill")
    dataset[1]
    assert sent == [(os.getpid(), signal.SIGTERM)]


def test_stack_dumps_say_in_one_sentence_that_they_need_sigusr1(monkeypatch, tmp_path):
    _without(monkeypatch, signal, "SIGUSR1")
    with pytest.raises(
        NotImplementedError, match=r"^stack dumps on a signal need SIGUSR1, which Windows lacks"
    ):
        failures.request_stack_dumps(tmp_path, n_workers=1)
