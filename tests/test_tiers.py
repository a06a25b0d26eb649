"""The test tiers (tools/course.py: CHECK, COURSE, TIMING, RELEASE): make check leaves out every
slow kind of test and every clock, make test runs each notebook once and the timing tests alone
after the rest, make test-spawn runs what the others leave out, every marker is known, and
`python -m pytest` alone runs the check tier."""

from __future__ import annotations

import subprocess
import sys

import pytest
from course_code import ROOT

from tools import course

SLOW = {"course", "timing", "spawn", "forkserver", "release"}


@pytest.fixture
def markers(pytestconfig) -> set[str]:
    return {line.split(":")[0] for line in pytestconfig.getini("markers")}


def _expression(args: list[str]) -> str:
    return args[args.index("-m") + 1]


def test_every_marker_a_tier_selects_by_is_registered(markers):
    for name in ("check", "test", "test-spawn", "unit", "notebooks"):
        for _, args in course.tier(name):
            words = set(_expression(args).replace("(", " ").replace(")", " ").split())
            assert words - {"not", "and", "or"} <= markers, name


def test_check_leaves_out_every_slow_kind_every_clock_and_every_notebook():
    [(_, args)] = course.tier("check")
    assert _expression(args) == " and ".join(
        f"not {m}" for m in ["course", "timing", "spawn", "forkserver", "release"]
    )
    assert args[-1] == "tests" and "notebooks" not in args and "solutions" not in args


def test_make_test_runs_course_tests_and_each_notebook_once_then_the_timing_tests_alone():
    (env, args), (_, serial) = course.tier("test")
    expression = _expression(args)
    assert "not course" not in expression and all(f"not {m}" in expression for m in SLOW - {"course"})
    assert {"tests", "notebooks", "solutions"} <= set(args) and env["LOADERLAB_BUDGET_SECONDS"] == "90"
    assert "no:cacheprovider" not in " ".join(args)  # the schedule reads the last run's times
    # the timing tests: in one process (no xdist), none beside them
    assert _expression(serial).startswith("timing and ") and "-n" not in serial
    assert serial[serial.index("-p") + 1] == "no:xdist"


def test_test_spawn_runs_what_make_test_leaves_out():
    (_, parallel), (_, serial) = course.tier("test-spawn")
    assert _expression(parallel) == "(spawn or forkserver or release) and not timing"
    assert _expression(serial) == "(spawn or forkserver or release) and timing" and "-n" not in serial


def test_an_unknown_tier_is_a_lookup_error():
    with pytest.raises(LookupError, match="no test tier 'nope'"):
        course.tier("nope")


@pytest.mark.parametrize(
    "platform, version, compared",
    [("linux", (3, 11), True), ("linux", (3, 12), False), ("darwin", (3, 11), False)],
)
def test_outputs_are_compared_only_where_they_were_recorded(platform, version, compared):
    assert course.compare_outputs(platform, version) is compared


@pytest.mark.course  # a second pytest that imports torch: seconds
def test_bare_pytest_selects_the_check_tier():
    """`python -m pytest` with no -m collects what `make check` runs: no course test."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "tests/test_bounded.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    collected = [line.split("::")[1] for line in done.stdout.splitlines() if "::" in line]
    assert collected == ["test_stable_error_keeps_first_and_last_line_without_ids"], done.stdout
