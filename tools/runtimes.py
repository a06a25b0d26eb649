"""Run times of the notebooks: one measured source for the README's course map and each header.

`python tools/execute_notebooks.py --record` (what `make execute` runs) stores each notebook's
measured execution time (kernel start included, fork, the machine otherwise idle) in
`docs/runtimes.json`, then rewrites the "**Runs in:** about N s on 2 CPU cores" phrase of the
notebook's first cell (a lab's "the solved lab runs in about N s on 2 CPU cores": the whole
solution notebook, checker included) and the "runs in"
column of README's course map and the "run, fork" column of `docs/instructor.md`'s table from it.
`tests/test_runtimes.py` checks that all three still agree with the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
RUNTIMES = ROOT / "docs" / "runtimes.json"
README = ROOT / "README.md"
INSTRUCTOR = ROOT / "docs" / "instructor.md"
HEADER = re.compile(r"(\*\*Runs in:\*\* |the solved lab runs in )([^\n]*?)( on 2 (?:idle )?CPU cores)")
README_ROW = re.compile(r"^(\| (\d\d) \| \[[^\]]+\]\(notebooks/[^)]+\) \|.*\| )([^|]*)( \| [^|]* \|)$", re.M)
# docs/instructor.md's run-time table: | 03 | [name](../notebooks/03_x.ipynb) | run, fork | run, spawn | ...
INSTRUCTOR_ROW = re.compile(r"^(\| (\d\d) \| \[[^\]]+\]\(\.\./notebooks/[^)]+\) \| )([^|]*?)( \|)", re.M)


def rounded(seconds: float) -> int:
    """Seconds rounded to a multiple of 5, at least 5: what a learner should expect."""
    return max(5, int(5 * round(seconds / 5)))


def phrase(seconds: float) -> str:
    """The header's wording: 'about 25 s'."""
    return f"about {rounded(seconds)} s"


def short(seconds: float) -> str:
    """The course map's wording: '~25 s'."""
    return f"~{rounded(seconds)} s"


def load() -> dict[str, float]:
    """Measured seconds per notebook path relative to the repository ('notebooks/03_x.ipynb')."""
    return json.loads(RUNTIMES.read_text()) if RUNTIMES.exists() else {}


def record(path: Path, seconds: float) -> None:
    """Store one notebook's measured time and rewrite its header's and README's figure."""
    rel = path.resolve().relative_to(ROOT).as_posix()
    times = load()
    times[rel] = round(seconds, 1)
    RUNTIMES.write_text(json.dumps(dict(sorted(times.items())), indent=1) + "\n")
    nb = nbformat.read(path, as_version=4)
    first = nb.cells[0]
    new, count = HEADER.subn(lambda m: m.group(1) + phrase(seconds) + m.group(3), first.source, count=1)
    if count and new != first.source:
        first.source = new
        nbformat.write(nb, path)
    if rel.startswith("notebooks/"):
        number = path.name[:2]
        for doc, row in ((README, README_ROW), (INSTRUCTOR, INSTRUCTOR_ROW)):
            doc.write_text(row.sub(
                lambda m: m.group(1) + short(seconds) + m.group(4) if m.group(2) == number else m.group(0),
                doc.read_text()))


def header_phrase(path: Path) -> str | None:
    """The phrase in a notebook's '**Runs in:**' line ('about 25 s'), or None without one."""
    match = HEADER.search(nbformat.read(path, as_version=4).cells[0].source)
    return match.group(2) if match else None


def readme_times() -> dict[str, str]:
    """The course map's 'runs in' column by notebook number ('03' -> '~30 s')."""
    return {m.group(2): m.group(3) for m in README_ROW.finditer(README.read_text())}


def instructor_times() -> dict[str, str]:
    """The instructor guide's 'run, fork' column by notebook number ('03' -> '~30 s')."""
    return {m.group(2): m.group(3) for m in INSTRUCTOR_ROW.finditer(INSTRUCTOR.read_text())}
