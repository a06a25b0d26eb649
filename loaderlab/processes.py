"""Which child processes are multiprocessing's own helpers (psutil only, no torch).

One answer for the test suite's leftover check (conftest.py), ``loaderlab.live_workers`` and
``make preflight``: the resource tracker and the forkserver live as long as the process that
uses them and are its direct children, so they are not leftover workers. Workers started by a
forkserver carry its command line too but are the forkserver's children, so they still count.
"""

from __future__ import annotations

import psutil

HELPER_MODULES = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def is_multiprocessing_helper(proc: psutil.Process, parent_pid: int) -> bool:
    """True when ``proc`` is the resource tracker or the forkserver that ``parent_pid`` started.

    A process that is gone (or cannot be read) counts as a helper: it is no live worker."""
    try:
        return proc.ppid() == parent_pid and any(m in " ".join(proc.cmdline()) for m in HELPER_MODULES)
    except (psutil.Error, OSError):
        return True
