"""The test tiers (tools/tiers.py): make check leaves out every slow kind of test, make test runs
each notebook once, make test-spawn runs what the others leave out, and every marker is known."""

from __future__ import annotations

import sys

import pytest
from course_code import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import tiers  # noqa: E402

SLOW = {"course", "spawn", "forkserver", "release"}


@pytest.fixture
def markers(pytestconfig) -> set[str]:
    return {line.split(":")[0] for line in pytestconfig.getini("markers")}


def _expression(args: list[str]) -> str:
    return args[args.index("-m") + 1]


def test_every_marker_a_tier_selects_by_is_registered(markers):
    for name in ("check", "test", "test-spawn", "unit", "notebooks"):
        words = set(_expression(tiers.tier(name)[1]).replace("(", " ").replace(")", " ").split())
        assert words - {"not", "and", "or"} <= markers, name


def test_check_leaves_out_every_slow_kind_and_every_notebook():
    _, args = tiers.tier("check")
    assert _expression(args) == " and ".join(f"not {m}" for m in ["course", "spawn", "forkserver", "release"])
    assert args[-1] == "tests" and "notebooks" not in args and "solutions" not in args


def test_make_test_runs_course_tests_and_each_notebook_once():
    env, args = tiers.tier("test")
    expression = _expression(args)
    assert "not course" not in expression and all(f"not {m}" in expression for m in SLOW - {"course"})
    assert {"tests", "notebooks", "solutions"} <= set(args) and env["LOADERLAB_TEST_MODE"] == "1"
    assert "no:cacheprovider" not in " ".join(args)  # the schedule reads the last run's times


def test_test_spawn_runs_what_make_test_leaves_out():
    assert set(_expression(tiers.tier("test-spawn")[1]).split(" or ")) == SLOW - {"course"}


@pytest.mark.parametrize("platform, version, compared", [("linux", (3, 11), True), ("linux", (3, 12), False),
                                                         ("darwin", (3, 11), False)])
def test_outputs_are_compared_only_where_they_were_recorded(monkeypatch, platform, version, compared):
    monkeypatch.setattr(sys, "platform", platform)
    monkeypatch.setattr(sys, "version_info", (*version, 0, "final", 0))
    assert tiers.compare_outputs() is compared
    assert ("--nbval-lax" in tiers.tier("test")[1]) is not compared
