"""nbval's sanitizers (tests/sanitize.cfg): what they make equal, and what they must not hide."""

from __future__ import annotations

import json
import re

import pytest
from course_code import ROOT
from nbval.plugin import get_sanitize_patterns

PATTERNS = get_sanitize_patterns((ROOT / "tests" / "sanitize.cfg").read_text())


def sanitize(text: str) -> str:
    """Apply the patterns in file order, as nbval does (``IPyNbCell.sanitize``)."""
    for regex, replace in PATTERNS:
        text = re.sub(regex, replace, text)
    return text


def stored_setup_line() -> str:
    """The environment line that notebook 00's setup cell stored."""
    nb = json.loads((ROOT / "notebooks" / "00_start_here.ipynb").read_text())
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            for line in "".join(output.get("text", "")).splitlines():
                if line.startswith("loaderlab "):
                    return line
    raise AssertionError("notebook 00 stores no setup line")


def test_the_setup_line_is_stored_with_a_patch_version():
    assert re.search(r"\| python 3\.\d+\.\d+ \|", stored_setup_line())


@pytest.mark.parametrize("python", ["3.11.0", "3.11.9", "3.11.14", "3.11.10rc1"])
def test_another_python_patch_release_compares_the_same(python):
    stored = stored_setup_line()
    other = re.sub(r"python \d+\.\d+\.\d+", f"python {python}", stored)
    assert other != stored or python == "3.11.7"
    assert sanitize(other) == sanitize(stored)


def test_a_build_suffix_compares_the_same():
    stored = stored_setup_line()
    assert sanitize(stored.replace("torch 2.13.0", "torch 2.13.0+cpu")) == sanitize(stored)


@pytest.mark.parametrize(
    "old, new",
    [
        ("python 3.11.", "python 3.12."),  # another minor release: outputs may really differ
        ("torch 2.13.0", "torch 2.14.0"),  # the RNG streams behind the outputs may differ
        ("numpy 2.4.6", "numpy 2.3.0"),
        ("start method fork", "start method spawn"),
    ],
)
def test_a_real_difference_is_not_hidden(old, new):
    stored = stored_setup_line()
    assert old in stored
    assert sanitize(stored.replace(old, new)) != sanitize(stored)
