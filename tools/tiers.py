"""The test tiers: what each `make` test target runs (one place; tools/course.py and the Makefile
read it). Each tier is extra environment variables and pytest's arguments, run with the course's
virtual environment's Python (`python -m pytest ...`) from the repository root.

- check: the package, checkers, doctor and tools with fakes and injected clocks, no kernels
  (every test not marked course, spawn, forkserver or release); about a minute on 2 cores. The
  command to run on every change.
- test: check's tests, the course tests (real clocks, workers, kernels, subprocesses) and every
  notebook and solution once under nbval (outputs compared where they were recorded), with the
  spawn guard (conftest.py) instead of a second pass; README and CI run it.
- test-spawn: before a release: every notebook and solution under spawn and forkserver, the
  unit tests' spawn cases and the release tests (second runs that make test covers otherwise).
- unit, notebooks: make test's two halves.
`make test-machines` is not a pytest tier: tools/machines.py.

`compare` says whether stored notebook outputs are compared: only on the recording platform
(Linux, Python 3.11); elsewhere nbval's lax mode runs the notebooks without comparing outputs.
"""

from __future__ import annotations

import sys

RECORDED_ON = ("linux", (3, 11))
CHECK = "not course and not spawn and not forkserver and not release"
COURSE = "not spawn and not forkserver and not release"
RELEASE = "spawn or forkserver or release"


def compare_outputs() -> bool:
    """True where stored notebook outputs are compared (the platform they were recorded on)."""
    return sys.platform.startswith(RECORDED_ON[0]) and sys.version_info[:2] == RECORDED_ON[1]


def tier(name: str) -> tuple[dict[str, str], list[str]]:
    """Return (extra environment, pytest arguments) for the test tier `name`."""
    lax = [] if compare_outputs() else ["--nbval-lax"]
    test_mode = {"LOADERLAB_TEST_MODE": "1"}
    # Work units (a test module, a notebook) go out longest first, by their last measured time
    # (conftest.py); a third process keeps 2 cores busy while kernels start and workers sleep.
    units = ["--dist", "loadscope", "--no-loadscope-reorder"]
    tiers = {
        "check": (test_mode, ["-n", "2", "-m", CHECK, "--durations=5", "tests"]),
        "test": ({**test_mode, "LOADERLAB_BUDGET_SECONDS": "90"},
                 [*lax, "-n", "3", *units, "-m", COURSE, "--durations=10",
                  "tests", "notebooks", "solutions"]),
        "test-spawn": (test_mode, ["-n", "2", "--dist", "load", "-m", RELEASE, "--durations=8", "tests"]),
        "unit": (test_mode, ["-n", "2", *units, "-m", COURSE, "tests"]),
        "notebooks": (test_mode, [*lax, "-m", COURSE, "notebooks", "solutions"]),
    }
    return tiers[name]
