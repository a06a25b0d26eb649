"""Shared test setup: a non-interactive matplotlib backend and a leak check for workers."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402


@pytest.fixture
def no_leaked_workers():
    """Fail the test if it leaves DataLoader worker processes alive."""
    from loaderlab.measure import wait_for_workers_to_exit

    yield
    assert wait_for_workers_to_exit(10.0) == 0, "worker processes left alive after the test"
