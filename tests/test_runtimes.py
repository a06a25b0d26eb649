"""The course map's, the headers' and the instructor guide's run times come from one measured
file, docs/runtimes.json."""

from __future__ import annotations

import pytest
from course_code import ROOT

from tools import runtimes

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[f"{p.parent.name}/{p.name}" for p in NOTEBOOKS])
def test_header_and_course_map_give_the_measured_run_time(path):
    rel = path.relative_to(ROOT).as_posix()
    measured = runtimes.load().get(rel)
    assert measured is not None, f"{rel} has no measured run time: run `make execute NB={rel}`"
    assert runtimes.header_phrase(path) == runtimes.phrase(measured), (
        f"{rel}'s 'Runs in' line disagrees with docs/runtimes.json ({measured} s)")
    if path.parent.name == "notebooks":
        assert runtimes.readme_times()[path.name[:2]] == runtimes.short(measured)
        assert runtimes.instructor_times()[path.name[:2]] == runtimes.short(measured), (
            f"docs/instructor.md's 'run, fork' for {path.name[:2]} disagrees with docs/runtimes.json")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[f"{p.parent.name}/{p.name}" for p in NOTEBOOKS])
def test_each_notebook_alone_runs_within_its_45_s_budget(path):
    """make test runs two at a time with a 90 s budget; alone and idle each must take <= 45 s."""
    measured = runtimes.load().get(path.relative_to(ROOT).as_posix())
    assert measured is None or measured <= 45, f"{path.name} took {measured} s alone on an idle machine"


def test_every_measured_notebook_still_exists():
    assert {rel for rel in runtimes.load() if not (ROOT / rel).exists()} == set()


@pytest.mark.parametrize(("seconds", "text"), [(1.2, "about 5 s"), (7.4, "about 5 s"), (7.6, "about 10 s"),
                                               (43.0, "about 45 s"), (61, "about 60 s")])
def test_run_times_are_rounded_to_five_seconds(seconds, text):
    assert runtimes.phrase(seconds) == text
