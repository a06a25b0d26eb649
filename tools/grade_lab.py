"""What the grader reads from a lab and from a submission (tools/grade.py runs them).

``lab_checks`` finds an official lab's checks (each ``name = check_x(args)`` line whose checker a
``from loaderlab.checks.labNN import ...`` line names) and its closing cells; ``student_cells``
keeps a submission's code cells without its checker calls and the lab's closing cells, each
numbered as the student counts cells. Standard library and nbformat only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CHECK_CALL = re.compile(r"\bcheck_\w+\s*\(")
CHECK_LINE = re.compile(r"^\s*(\w+)\s*=\s*(check_\w+)\((.*)\)\s*$")
ONLY_CHECKS = re.compile(r"^\s*((\w+\s*=\s*)?check_\w+\(.*\)\s*|#.*)?$")
CHECK_IMPORT = re.compile(r"^from (loaderlab\.checks\.\w+) import (?:\(([^)]*)\)|([^(\n]+))", re.M)


@dataclass
class Check:
    """One official check of a lab: ``check(args)`` from ``module``, as its check cell calls it."""

    name: str
    module: str
    args: str
    passed: bool = False
    out: str = ""  # what the checker printed (its one line)
    error: str | None = None  # the call itself failed (e.g. a name the answer never defined)


def lab_checks(lab_text: str) -> tuple[list, list[Check], list[str]]:
    """Return the official lab's code cells, its checks (in order) and its closing cells' sources."""
    import nbformat

    official = [c for c in nbformat.reads(lab_text, as_version=4).cells if c.cell_type == "code"]
    modules = {}
    for match in (m for c in official for m in CHECK_IMPORT.finditer(c.source)):
        for name in (match.group(2) or match.group(3)).split(","):
            if name.split("#")[0].strip():
                modules[name.split("#")[0].strip()] = match.group(1)
    checks, last = [], -1
    for index, cell in enumerate(official):
        for line in cell.source.splitlines():
            found = CHECK_LINE.match(line)
            if found and found.group(2) in modules:
                checks.append(Check(found.group(2), modules[found.group(2)], found.group(3)))
                last = index
    closing = [c.source for c in official[last + 1 :]] if checks else []
    return official, checks, closing


def student_cells(nb, closing: list[str]) -> list:
    """Return the submission's code cells to run (checker calls and the lab's closing cells left
    out), each with its number as the student counts cells."""
    import nbformat

    skip = {c.strip() for c in closing}
    cells = []
    for number, cell in enumerate(nb.cells, 1):
        lines = cell.source.splitlines()
        if (
            cell.cell_type == "code"
            and cell.source.strip() not in skip
            and not (CHECK_CALL.search(cell.source) and all(map(ONLY_CHECKS.match, lines)))
        ):
            cells.append(nbformat.v4.new_code_cell(cell.source, metadata={"student_cell": number}))
    return cells
