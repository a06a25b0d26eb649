"""How many CPU cores this process may really use (standard library only).

One implementation for the doctor, preflight (which runs it before anything is installed) and
the notebooks: the CPU affinity (`taskset`, a container's cpuset), capped by a container's
cgroup CPU quota (`docker run --cpus=2` on a 64-core host leaves 64 in the affinity mask).
"""

from __future__ import annotations

import os
from pathlib import Path

CGROUP_V2 = Path("/sys/fs/cgroup/cpu.max")
CGROUP_V1 = (Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us"))


def affinity_cores() -> int:
    """Return the number of CPUs in this process's affinity mask (os.cpu_count() without one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def cgroup_quota_cores(v2: Path = CGROUP_V2, v1: tuple[Path, Path] = CGROUP_V1) -> float | None:
    """Return the container's CPU quota in cores (e.g. 2.0), or None when there is no quota."""
    try:
        quota, period = v2.read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota_us, period_us = (int(p.read_text()) for p in v1)
        return None if quota_us <= 0 else quota_us / period_us
    except (OSError, ValueError):
        return None


def usable_cores() -> int:
    """Return the cores this process may use: its affinity, capped by a cgroup quota (at least 1)."""
    cores = affinity_cores()
    quota = cgroup_quota_cores()
    if quota is not None:
        cores = min(cores, max(1, int(quota)))
    return max(1, cores)
