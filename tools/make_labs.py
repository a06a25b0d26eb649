"""Generate labs/ from solutions/ (`make labs`); `--check` exits 1 when labs/ is out of date.

In a solution notebook the student's part sits between ``### BEGIN SOLUTION`` and
``### END SOLUTION``; the lab gets a stub that raises NotImplementedError there, and no outputs.
Every lab's metadata carries ``"loaderlab": {"lab": "01"}`` (from the solution's file name): the
grader (``python tools/grade.py``) identifies a submission by it, whatever the student named it.
Every lab starts with the Colab cell of tools/colab.py (after its title).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
try:  # python -m tools.make_labs (make labs), the tests
    from tools import colab  # the Colab cell every lab starts with
    from tools.course_files import notebooks_in
except ImportError:  # run as a script, `python tools/make_labs.py`: its folder is on sys.path
    import colab  # type: ignore[no-redef]
    from course_files import notebooks_in  # type: ignore[no-redef]

REGION = re.compile(r"^([ \t]*)### BEGIN SOLUTION[^\n]*\n.*?^[ \t]*### END SOLUTION[^\n]*$", re.S | re.M)


def stub_source(source: str) -> str:
    """Return ``source`` with every solution region replaced by an indented stub."""
    return REGION.sub(lambda m: f'{m.group(1)}raise NotImplementedError("your code here")', source)


def lab_for(solution: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(solution, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = stub_source(cell.source)
            cell.outputs = []
            cell.execution_count = None
    nb.metadata["loaderlab"] = {"lab": solution.name.split("_")[0]}
    return colab.insert(nb, "labs")  # on Colab only: clone, install, change into labs/


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.make_labs", description=__doc__.split("\n")[0] if __doc__ else None
    )
    parser.add_argument("--check", action="store_true", help="only say whether labs/ is current (exit 1)")
    check = parser.parse_args(argv).check
    stale = []
    expected = set()
    for solution in notebooks_in("solutions"):
        target = ROOT / "labs" / solution.name
        expected.add(target.name)
        text = nbformat.writes(lab_for(solution)) + "\n"
        if not target.exists() or target.read_text() != text:
            stale.append(target.name)
            if not check:
                target.write_text(text)
    extra = [p.name for p in notebooks_in("labs") if p.name not in expected]
    if check:
        for name in stale:
            print(f"labs/{name} is out of date: run `make labs`")
        for name in extra:
            print(f"labs/{name} has no solution in solutions/: remove it or add the solution")
        return 1 if stale or extra else 0
    for name in extra:
        (ROOT / "labs" / name).unlink()
    print(f"labs: {len(stale)} written, {len(extra)} removed, {len(expected)} in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
