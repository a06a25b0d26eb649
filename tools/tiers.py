"""The test tiers: what each `make` test target runs (one place; tools/course.py and the Makefile
read it). Each tier is extra environment variables and pytest's arguments, run with the course's
virtual environment's Python (`python -m pytest ...`) from the repository root.

`compare` says whether stored notebook outputs are compared: only on the recording platform
(Linux, Python 3.11); elsewhere nbval's lax mode runs the notebooks without comparing outputs.
"""

from __future__ import annotations

import sys

RECORDED_ON = ("linux", (3, 11))


def compare_outputs() -> bool:
    """True where stored notebook outputs are compared (the platform they were recorded on)."""
    return sys.platform.startswith(RECORDED_ON[0]) and sys.version_info[:2] == RECORDED_ON[1]


def tier(name: str) -> tuple[dict[str, str], list[str]]:
    """Return (extra environment, pytest arguments) for the test tier `name`."""
    lax = [] if compare_outputs() else ["--nbval-lax"]
    test_mode = {"LOADERLAB_TEST_MODE": "1"}
    tiers = {
        "test": ({**test_mode, "LOADERLAB_BUDGET_SECONDS": "90"},
                 [*lax, "-n", "3", "--dist", "loadscope", "--no-loadscope-reorder", "-m", "not spawn",
                  "--durations=10", "tests", "notebooks", "solutions"]),
        "test-spawn": (test_mode, ["-n", "2", "--dist", "load", "-m", "spawn", "--durations=8", "tests"]),
        "unit": (test_mode, ["-n", "2", "--dist", "loadscope", "--no-loadscope-reorder", "tests"]),
        "notebooks": (test_mode, [*lax, "notebooks", "solutions"]),
    }
    return tiers[name]
