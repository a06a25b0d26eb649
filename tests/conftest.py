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


# `make test` runs the unit tests with `-n 2 --dist loadgroup`: every test is scheduled on its
# own except these groups, each kept on one worker and started first (the longest items):
# tests whose assertions compare measured durations run one after another, never beside
# each other; the static-site build (about 40 s of CPU) happens once.
GROUPS = {
    "timing": ("test_measure", "test_threads", "test_workers", "test_checks_speed",
               "test_bottleneck", "test_caching", "test_startmethods"),
    "site": ("test_site",),
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    group_of = {module: group for group, modules in GROUPS.items() for module in modules}
    for item in items:
        group = group_of.get(item.path.stem) if item.path.parent.name == "tests" else None
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
    order = list(GROUPS)
    items.sort(key=lambda item: order.index(group_of[item.path.stem])
               if item.path.stem in group_of else len(order))
