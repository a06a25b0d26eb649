"""Unit tests for loaderlab.sharing: descriptor counts, arithmetic, and the child experiments
(counts and outcomes, never wall-clock luck)."""

from __future__ import annotations

import sys

import pytest

from loaderlab import sharing

LINUX = sys.platform.startswith("linux")


def test_stable_error_keeps_first_and_last_line_without_ids():
    text = ("RuntimeError: Caught RuntimeError in DataLoader worker process 1.\nOriginal Traceback:\n"
            "  File x\nRuntimeError: unable to allocate shared memory(shm) for file "
            "</torch_1234_5678_9>: No space left on device (28)")
    assert sharing.stable_error(text) == (
        "RuntimeError: Caught RuntimeError in DataLoader worker process N.\n"
        "RuntimeError: unable to allocate shared memory(shm) for file </torch_N>: "
        "No space left on device (28)")
    assert sharing.stable_error("DataLoader worker (pid 42) died") == "DataLoader worker (pid N) died"
    assert sharing.stable_error("") == ""
    with pytest.raises(TypeError, match="text"):
        sharing.stable_error(3)


