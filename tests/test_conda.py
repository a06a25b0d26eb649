"""environment.yml (docs/install.md's conda route) stays equal to the requirements (#38): it
brings a supported Python and pip, and its pip section installs requirements.txt and the course,
so no version lives in two places."""

from __future__ import annotations

import re
import tomllib

from course_code import ROOT

from tools import course


def _environment() -> tuple[list[str], list[str]]:
    """environment.yml's conda dependencies and its pip section, as written (a list of strings
    each: the file is read line by line, so no YAML library is needed)."""
    conda, pip, in_pip = [], [], False
    lines = (ROOT / "environment.yml").read_text().splitlines()
    body = lines[[line.strip() for line in lines].index("dependencies:") + 1 :]
    for line in body:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = re.fullmatch(r"(\s*)- (.+?)\s*(#.*)?", line)
        assert item, f"environment.yml: not a list item: {line!r}"
        if item.group(2) == "pip:":
            in_pip = True
        elif in_pip and len(item.group(1)) > 2:
            pip.append(item.group(2))
        else:
            in_pip = False
            conda.append(item.group(2))
    return conda, pip


def test_environment_yml_installs_requirements_txt_and_the_course():
    conda, pip = _environment()
    assert pip == ["-r requirements.txt", "-e ."], f"pip section: {pip}"
    assert (ROOT / "requirements.txt").is_file()
    others = [d for d in conda if not re.fullmatch(r"(python=[\d.]+|pip)", d)]
    assert not others, f"conda packages besides python and pip (pin them in requirements.txt): {others}"


def test_environment_yml_brings_a_supported_python():
    conda, _ = _environment()
    pythons = [d.split("=", 1)[1] for d in conda if d.startswith("python=")]
    assert len(pythons) == 1, conda
    version = tuple(int(n) for n in pythons[0].split("."))[:2]
    assert version in course.SUPPORTED, f"python={pythons[0]}: the course runs on {course.SUPPORTED_TEXT}"
    assert version == (3, 11), "the stored outputs are compared on 3.11: conda users get that one"
    low, high = re.fullmatch(
        r">=(3\.\d+),<(3\.\d+)",
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"],
    ).groups()
    assert tuple(map(int, low.split("."))) <= version < tuple(map(int, high.split(".")))
