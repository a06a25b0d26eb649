"""Helpers for notebook 15's bounded children: a private, small ``/dev/shm`` and stable errors.

``private_shm_prefix`` gives the command prefix that runs a child in its own mount namespace
(``unshare --mount``) with a small tmpfs on ``/dev/shm``, which disappears with the child;
``stable_error`` makes an error's pids and segment names printable as stable output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from loaderlab.loaders import require_positive
from loaderlab.workers import SHM_PATH

_SEGMENT = re.compile(r"torch_\d+_\d+(_\d+)?")
_PIDS = re.compile(r"\bpid(\(s\))? \d+(, \d+)*")
_WORKER_ID = re.compile(r"\bworker process \d+")


# ------------------------------------------------------------------------------ counting


def stable_error(text: str) -> str:
    """Return the first and last line of an error message with process ids and segment
    names made stable (``pid N``, ``torch_N``, ``worker process N``): the parts that are the same on every run."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    picked = lines[:1] + (lines[-1:] if len(lines) > 1 else [])
    return "\n".join(
        _WORKER_ID.sub("worker process N", _PIDS.sub("pid N", _SEGMENT.sub("torch_N", line)))
        for line in picked
    )


# ------------------------------------------------------------------------ holding batches


# ------------------------------------------------------------------------ child experiments


_PRIVATE_SHM: dict[int, list[str] | None] = {}


def private_shm_prefix(shm_mb: int = 64) -> list[str] | None:
    """Return the command prefix that runs a program with its own ``shm_mb`` MB tmpfs on
    ``/dev/shm`` (a private mount namespace: the real ``/dev/shm`` is never touched), or None
    where that is impossible (not Linux, no ``unshare``, no right to mount)."""
    require_positive(shm_mb, "shm_mb")
    if shm_mb in _PRIVATE_SHM:
        return _PRIVATE_SHM[shm_mb]
    prefix = None
    if sys.platform.startswith("linux") and shutil.which("unshare") and os.path.isdir(SHM_PATH):
        mount = f"mount -t tmpfs -o size={shm_mb}m loaderlab-shm {SHM_PATH} && exec \"$@\""
        for flags in (["--mount"], ["--user", "--map-root-user", "--mount"]):
            candidate = ["unshare", *flags, "--propagation", "private", "sh", "-c", mount, "sh"]
            try:
                probe = subprocess.run([*candidate, "true"], capture_output=True, timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if probe.returncode == 0:
                prefix = candidate
                break
    _PRIVATE_SHM[shm_mb] = prefix
    return prefix


