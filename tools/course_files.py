"""The course's notebooks, listed one way (standard library only: `make claims` runs before setup).

``notebooks_in("solutions")`` lists a folder's notebooks in course order; ``numbered("07")`` finds
the one notebook of a folder whose name starts with a number. Every tool that lists or finds the
course's notebooks asks here.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("notebooks", "solutions")  # what runs and is recorded: labs/ is generated from solutions/


def notebooks_in(folder: str, root: Path = ROOT) -> list[Path]:
    """The notebooks of ``folder`` (notebooks, solutions, labs) under ``root``, in course order."""
    return sorted((root / folder).glob("*.ipynb"))


def numbered(number: str, folder: str = "notebooks", root: Path = ROOT) -> Path:
    """The notebook of ``folder`` whose name starts with ``number`` ("07" -> 07_....ipynb); a
    LookupError (its message one line) unless there is exactly one."""
    found = sorted((root / folder).glob(f"{number}_*.ipynb"))
    if len(found) != 1:
        raise LookupError(f"{folder}/{number}_*.ipynb: {len(found)} notebooks, expected 1")
    return found[0]
