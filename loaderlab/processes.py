"""Child processes, with psutil only (no torch): which are multiprocessing's own helpers, and
the one way the course kills a process with everything it started (``kill_tree``: loaderlab.bounded
and the labs' bounded children, the grader's kernels).

One answer for the test suite's leftover check (conftest.py), ``loaderlab.live_workers`` and
``make preflight``: the resource tracker and the forkserver live as long as the process that
uses them and are its direct children, so they are not leftover workers. Workers started by a
forkserver carry its command line too but are the forkserver's children, so they still count.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import time
from collections.abc import Iterable

import psutil

HELPER_MODULES = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")
START_METHOD_VARIABLE = "LOADERLAB_START_METHOD"


def configured_start_method() -> str:
    """The start method the course's workers get here: ``LOADERLAB_START_METHOD`` when set, else
    Python's default on this platform (loaderlab.env applies it; tools/machines.py reports it)."""
    return os.environ.get(START_METHOD_VARIABLE, "").strip() or multiprocessing.get_start_method()


def is_multiprocessing_helper(proc: psutil.Process, parent_pid: int) -> bool:
    """True when ``proc`` is the resource tracker or the forkserver that ``parent_pid`` started.

    A process that is gone (or cannot be read) counts as a helper: it is no live worker."""
    try:
        return proc.ppid() == parent_pid and any(m in " ".join(proc.cmdline()) for m in HELPER_MODULES)
    except (psutil.Error, OSError):
        return True


def kill_tree(pid: int, wait_s: float = 5.0, also: Iterable[psutil.Process] = ()) -> None:
    """Kill process ``pid``'s group and all its descendants (also those in sessions of their
    own, like torchrun's ranks), and the processes in ``also`` (descendants seen earlier, which
    may have been re-parented since); return once none of them runs (at most ``wait_s``)."""
    try:  # the descendants first: once their parent dies they can no longer be found
        family = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        family = []
    family += [proc for proc in also if proc not in family]
    if hasattr(os, "killpg"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    else:  # Windows has no process groups: the child itself, then the descendants found above
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()
    for member in family:
        with contextlib.suppress(psutil.Error):
            member.kill()
    deadline = time.monotonic() + wait_s
    while (group_members(pid) or any(map(running, family))) and time.monotonic() < deadline:
        time.sleep(0.02)  # SIGKILL is delivered, not waited for


def running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def group_members(pgid: int) -> list[int]:
    """Return the pids of the processes in group ``pgid`` that are not zombies. Windows has no
    process groups: there, the running descendants of process ``pgid`` while it still exists
    (so processes that an exited child left behind are not counted)."""
    if not hasattr(os, "getpgid"):
        try:
            return [proc.pid for proc in psutil.Process(pgid).children(recursive=True) if running(proc)]
        except psutil.Error:
            return []
    members = []
    for proc in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc.pid)
    return members
