"""Written by notebook 23, section 3: a memory limit for a child process; a worker that grows past it."""

import contextlib
import os
import time
import uuid
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

CGROUP_ROOTS = [  # (version, directory, the file that sets the limit)
    ("v2", "/sys/fs/cgroup", "memory.max"),
    ("v2", "/sys/fs/cgroup/unified", "memory.max"),
    ("v1", "/sys/fs/cgroup/memory", "memory.limit_in_bytes"),
]


def where_to_limit() -> tuple[str, str, str] | str:
    """Return (version, directory, limit file) of a memory cgroup this process may create, or why none."""
    if not hasattr(os, "fork") or not os.path.isdir("/sys/fs/cgroup"):
        return "no cgroups on this system (Linux only)"
    for version, root, limit_file in CGROUP_ROOTS:
        controllers = Path(root, "cgroup.controllers")
        if version == "v2" and not (controllers.exists() and "memory" in controllers.read_text().split()):
            continue  # a v2 hierarchy without the memory controller
        if version == "v1" and not Path(root, limit_file).exists():
            continue
        if os.access(root, os.W_OK):
            return version, root, limit_file
    return "no memory cgroup this user may create (try: systemd-run --user --scope -p MemoryMax=300M ...)"


@contextlib.contextmanager
def memory_cgroup(limit_mb: int):
    """Create a fresh memory cgroup limited to `limit_mb` MB; yield its directory; remove it after."""
    found = where_to_limit()
    if isinstance(found, str):
        raise OSError(found)
    version, root, limit_file = found
    group = Path(root, f"loaderlab-{uuid.uuid4().hex[:8]}")
    group.mkdir()
    try:
        (group / limit_file).write_text(str(limit_mb * 2**20))
        if version == "v2":
            (group / "memory.swap.max").write_text("0") if (group / "memory.swap.max").exists() else None
        yield group
    finally:  # the processes must be gone before the directory can go
        for _ in range(100):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.05)


class GrowingCache(Dataset):
    """Returns a small tensor; keeps every sample's `sample_mb` MB of "decoded" data in a cache that
    never stops growing."""

    def __init__(self, n: int = 100, sample_mb: int = 8):
        self.n, self.sample_mb, self.cache = n, sample_mb, []

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        self.cache.append(np.full(self.sample_mb * 2**20, 1, dtype=np.uint8))
        return torch.tensor(index)


def oom_kills(group: Path) -> int:
    """Return how many processes the kernel's OOM killer has killed in cgroup `group`."""
    events = group / ("memory.events" if (group / "memory.events").exists() else "memory.oom_control")
    counts = dict(line.split() for line in events.read_text().splitlines())
    return int(counts.get("oom_kill", 0))


def peak_mb(group: Path) -> float | None:
    """Return the cgroup's peak memory use in MB, as the kernel counts it against the limit (or None)."""
    for name in ("memory.peak", "memory.max_usage_in_bytes"):  # v2 (Linux 5.19+), v1
        if (group / name).exists():
            return int((group / name).read_text()) / 2**20
    return None


def load_in_cgroup(group: Path, dataset: Dataset, **loader_kwargs) -> dict:
    """Join cgroup `group`, then read one epoch of DataLoader(dataset, **loader_kwargs); return
    the batches read and the error raised, with its cause."""
    (group / "cgroup.procs").write_text(str(os.getpid()))  # this process and its future workers are limited
    loader = DataLoader(dataset, timeout=60, **loader_kwargs)
    batches = 0
    try:
        for _batch in loader:
            batches += 1  # a training step would run here
    except RuntimeError as exc:  # what your training loop sees
        cause = exc.__cause__
        return {"batches": batches, "error": f"{type(exc).__name__}: {exc}",
                "cause": f"{type(cause).__name__}: {cause}" if cause else None}
    return {"batches": batches, "error": None, "cause": None}
