"""Load the course's own code in tests: the snippets of docs/snippets/ and the lesson modules
the notebooks write (notebooks/lessonNN.py), the one source of each."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent  # the one ROOT of the tests: `from course_code import ROOT`


def snippet(name: str) -> ModuleType:
    """Return docs/snippets/<name>.py, executed as a fresh module."""
    spec = importlib.util.spec_from_file_location(f"snippet_{name}",
                                                  ROOT / "docs" / "snippets" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lesson(name: str) -> ModuleType:
    """Return notebooks/<name>.py imported by name, as workers import it (lesson modules may
    import each other)."""
    sys.path.insert(0, str(ROOT / "notebooks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "notebooks"))
