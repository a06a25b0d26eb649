"""Run times and peak memory of the notebooks: one measured source for the README's course map
and each header.

The recorder (`make record`, tools/record.py) stores each notebook's measured execution time
(kernel start included, fork, the machine otherwise idle) in `docs/runtimes.json` and its peak
memory (kernel and all its children, summed PSS) in `docs/peak_memory.json`, then rewrites the
"**Runs in:** about N s on 2 CPU cores · **Peak memory:** about M MB" phrase of the notebook's
first cell (a lab's "the solved lab runs in about N s on 2 CPU cores · peak memory about M MB":
the whole solution notebook, checker included), the "runs in" and "peak memory" columns of
README's course map and the "run, fork" column of `docs/instructor.md`'s table from them.
`tests/test_runtimes.py` checks that they all still agree with the files and the notebook's
own record (`metadata.loaderlab.record`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
RUNTIMES = ROOT / "docs" / "runtimes.json"
PEAK_MEMORY = ROOT / "docs" / "peak_memory.json"
README = ROOT / "README.md"
INSTRUCTOR = ROOT / "docs" / "instructor.md"
# "**Runs in:** about 25 s on 2 CPU cores · **Peak memory:** about 600 MB" (a notebook),
# "the solved lab runs in about 5 s on 2 CPU cores · peak memory about 300 MB" (a lab)
MEMORY = r"(?: · \*\*Peak memory:\*\* | · peak memory )about [\d.]+ [MG]B"
HEADER = re.compile(
    r"(\*\*Runs in:\*\* |the solved lab runs in )([^\n]*?)( on 2 (?:idle )?CPU cores)"
    rf"({MEMORY})?"
)
# | 03 | [name](notebooks/03_x.ipynb) | you learn | runs in | peak memory | lab |
README_ROW = re.compile(
    r"^(\| (\d\d) \| \[[^\]]+\]\(notebooks/[^)]+\) \|.*\| )([^|]*)( \| )([^|]*)( \| [^|]* \|)$", re.M
)
NOT_MEASURED = "—"  # the course map's peak memory before a notebook's first record
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


def memory_mb(mb: float) -> str:
    """Peak memory as a learner should expect it: '450 MB' (to 50 MB, at least 50), '1.5 GB'."""
    return f"{max(50, int(50 * round(mb / 50)))} MB" if mb < 1000 else f"{mb / 1024:.1f} GB"


def memory_phrase(mb: float, lab: bool = False) -> str:
    """The header's wording after the run time: ' · **Peak memory:** about 450 MB' (a lab: lower case)."""
    return (" · peak memory about " if lab else " · **Peak memory:** about ") + memory_mb(mb)


def memory_short(mb: float | None) -> str:
    """The course map's wording: '~450 MB', or '—' before the first record."""
    return NOT_MEASURED if mb is None else f"~{memory_mb(mb)}"


def load() -> dict[str, float]:
    """Measured seconds per notebook path relative to the repository ('notebooks/03_x.ipynb')."""
    return json.loads(RUNTIMES.read_text()) if RUNTIMES.exists() else {}


def load_peaks() -> dict[str, float]:
    """Measured peak memory (MB) per notebook path relative to the repository."""
    return json.loads(PEAK_MEMORY.read_text()) if PEAK_MEMORY.exists() else {}


def _store(file: Path, rel: str, value: float) -> None:
    values = json.loads(file.read_text()) if file.exists() else {}
    values[rel] = value
    file.write_text(json.dumps(dict(sorted(values.items())), indent=1) + "\n")


def header(source: str, seconds: float, peak_mb: float | None, lab: bool) -> str:
    """``source`` (a first cell) with its run time, and its peak memory when measured, rewritten."""

    def new(m: re.Match) -> str:
        memory = (m.group(4) or "") if peak_mb is None else memory_phrase(peak_mb, lab)
        return m.group(1) + phrase(seconds) + m.group(3) + memory

    return HEADER.sub(new, source, count=1)


def record(path: Path, seconds: float, peak_mb: float | None = None) -> None:
    """Store one notebook's measured time (and peak memory) and rewrite its header's and the
    course map's figures."""
    rel = path.resolve().relative_to(ROOT).as_posix()
    _store(RUNTIMES, rel, round(seconds, 1))
    if peak_mb is not None:
        _store(PEAK_MEMORY, rel, round(peak_mb))
    nb = nbformat.read(path, as_version=4)
    first = nb.cells[0]
    new = header(first.source, seconds, peak_mb, lab=not rel.startswith("notebooks/"))
    if new != first.source:
        first.source = new
        nbformat.write(nb, path)
    if rel.startswith("notebooks/"):
        number = path.name[:2]
        memory = memory_short(load_peaks().get(rel))
        README.write_text(
            README_ROW.sub(
                lambda m: (
                    m.group(1) + short(seconds) + m.group(4) + memory + m.group(6)
                    if m.group(2) == number
                    else m.group(0)
                ),
                README.read_text(),
            )
        )
        INSTRUCTOR.write_text(
            INSTRUCTOR_ROW.sub(
                lambda m: m.group(1) + short(seconds) + m.group(4) if m.group(2) == number else m.group(0),
                INSTRUCTOR.read_text(),
            )
        )


def header_phrase(path: Path) -> str | None:
    """The phrase in a notebook's '**Runs in:**' line ('about 25 s'), or None without one."""
    match = HEADER.search(nbformat.read(path, as_version=4).cells[0].source)
    return match.group(2) if match else None


def header_memory(path: Path) -> str | None:
    """The peak memory a notebook's header states ('450 MB'), or None where it states none."""
    match = HEADER.search(nbformat.read(path, as_version=4).cells[0].source)
    return match.group(4).rsplit("about ", 1)[1] if match and match.group(4) else None


def readme_times() -> dict[str, str]:
    """The course map's 'runs in' column by notebook number ('03' -> '~30 s')."""
    return {m.group(2): m.group(3) for m in README_ROW.finditer(README.read_text())}


def readme_memory() -> dict[str, str]:
    """The course map's 'peak memory' column by notebook number ('03' -> '~450 MB', or '—')."""
    return {m.group(2): m.group(5) for m in README_ROW.finditer(README.read_text())}


def instructor_times() -> dict[str, str]:
    """The instructor guide's 'run, fork' column by notebook number ('03' -> '~30 s')."""
    return {m.group(2): m.group(3) for m in INSTRUCTOR_ROW.finditer(INSTRUCTOR.read_text())}
