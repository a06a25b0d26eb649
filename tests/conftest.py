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


# `make test` runs the unit tests with `-n 2 --dist loadscope`: each module stays on one worker
# (so the static-site build, about 40 s of CPU, happens once), and modules are handed out in
# collection order. The longest modules go first, so that neither worker is left with a long
# one at the end. (`--dist loadgroup` would let modules that time things share one worker, but
# with pytest 9.2 and xdist 3.8 it ignores `xdist_group` marks: checked on a 3-test module.)
LONGEST_FIRST = ("test_site", "test_labs", "test_lesson_edit", "test_checks_speed", "test_distributed", "test_doctor")


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        stem = item.path.stem
        return LONGEST_FIRST.index(stem) if stem in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)
