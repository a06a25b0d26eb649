"""Checkers only judge: a lab imports its scaffolding (clients, tables, experiments) from
``loaderlab.labs`` and only ``check_*`` functions from ``loaderlab.checks``; the scaffolding
imports no checker, so a lab's setup works without them and the grader can load checkers afresh."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from course_code import ROOT  # noqa: E402

CHECKS_IMPORT = re.compile(r"from loaderlab\.checks[\w.]* import \(?([^)\n]*)\)?")
SCAFFOLDING = sorted(p.stem for p in (ROOT / "loaderlab" / "labs").glob("*.py") if p.stem != "__init__")


def _sources() -> list[tuple[str, str]]:
    found = []
    for path in sorted((ROOT / "solutions").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        found += [(path.name, "".join(c["source"])) for c in cells if c["cell_type"] == "code"]
    found += [(p.name, p.read_text(encoding="utf-8")) for p in sorted((ROOT / "solutions").glob("*.py"))]
    return found


def test_labs_import_only_checkers_from_the_checks_package():
    for name, source in _sources():
        for match in CHECKS_IMPORT.finditer(source):
            names = [n.strip() for n in match.group(1).split(",") if n.strip()]
            assert all(n.startswith("check_") for n in names), f"{name}: {match.group(0)}"


@pytest.mark.parametrize("module", SCAFFOLDING)
def test_scaffolding_imports_no_checker(module):
    script = (
        f"import sys, loaderlab.labs.{module}\n"
        "print(sorted(m for m in sys.modules if m.startswith('loaderlab.checks')))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]", f"loaderlab.labs.{module} imported {result.stdout.strip()}"
