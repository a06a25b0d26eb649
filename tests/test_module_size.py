"""No module of the package or the tools is over 600 lines (#39): past that, a module holds more
than one idea and is split along its seam (preflight's checks and its report, the grader's run
and what it hands back, the doctor's probes by what they probe)."""

from __future__ import annotations

import pytest
from course_code import ROOT

MAX_LINES = 600
MODULES = sorted(p for folder in ("loaderlab", "tools") for p in (ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[p.relative_to(ROOT).as_posix() for p in MODULES])
def test_no_module_is_over_600_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines (at most {MAX_LINES}): split it"
