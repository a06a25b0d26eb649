"""Checkers only judge: a lab imports its scaffolding (clients, tables, experiments) from
``loaderlab.labs`` and only ``check_*`` functions from ``loaderlab.checks``; the scaffolding
imports no checker, so a lab's setup works without them and the grader can load checkers afresh."""

from __future__ import annotations

import json
import re
import subprocess
import sys

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


def test_scaffolding_imports_no_checker():
    # one fresh Python (torch imported once), each module imported with every loaderlab module
    # forgotten before it, so a checker that one module imports is not hidden by another's import
    script = (
        "import json, sys\n"
        "found = {}\n"
        f"for module in {SCAFFOLDING!r}:\n"
        "    for name in [m for m in sys.modules if m.split('.')[0] == 'loaderlab']:\n"
        "        del sys.modules[name]\n"
        "    __import__('loaderlab.labs.' + module)\n"
        "    found[module] = sorted(m for m in sys.modules if m.startswith('loaderlab.checks'))\n"
        "print(json.dumps(found))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    found = json.loads(result.stdout)
    assert sorted(found) == SCAFFOLDING and len(SCAFFOLDING) >= 6
    assert {m: checks for m, checks in found.items() if checks} == {}, "scaffolding imported checkers"
