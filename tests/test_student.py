"""`make student` (tools/make_student.py): the zip for students holds the labs, the notebooks with
the lesson modules the labs import, the package and the setup files, and no answers. ~1 s."""

from __future__ import annotations

import re
import zipfile

import pytest
from course_code import ROOT

from tools import make_student


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("student") / "student.zip"
    assert make_student.main(["--out", str(out)]) == 0
    with zipfile.ZipFile(out) as z:
        names = {n.removeprefix(f"{make_student.FOLDER}/"): n for n in z.namelist()}
        labs = {n: z.read(full).decode() for n, full in names.items() if n.startswith("labs/")}
    return names, labs


def test_the_bundle_has_no_answers(bundle):
    names, _ = bundle
    assert not [n for n in names if n.startswith(("solutions/", "tests/")) or n == "docs/answers.md"]
    for answer in ("solutions/01_loop_to_dataloader.ipynb", "solutions/lab01.py", "docs/answers.md",
                   "docs/instructor.md", "tests/test_grade.py", "conftest.py", "labs/lab01.py"):
        assert not make_student.keep(answer), answer


@pytest.mark.course
def test_the_bundle_has_what_a_student_runs(bundle):
    names, labs = bundle
    for needed in ("README.md", "Makefile", "requirements.txt", "pyproject.toml", "loaderlab/__init__.py",
                   "loaderlab/checks/report.py", "tools/lab_server.py", "notebooks/00_start_here.ipynb",
                   # `make lab` and `py tools/course.py lab` (Windows), preflight before install
                   "tools/course.py", "tools/install.py", "tools/preflight.py", "tools/__init__.py",
                   "loaderlab/cores.py",
                   "docs/install.md", "jupyter/overrides.json"):
        assert needed in names, needed
    tracked = {f"labs/{p.name}" for p in (ROOT / "labs").glob("*.ipynb")}
    assert tracked and {n for n in labs if n.endswith(".ipynb")} <= tracked


def test_the_labs_need_nothing_from_solutions_and_find_their_lesson_modules(bundle):
    names, labs = bundle
    for name, text in labs.items():
        assert "solutions/" not in text, name
        for module in set(re.findall(r"from (lesson\w+) import", text)):
            assert f"notebooks/{module}.py" in names, (name, module)


def test_a_lab_that_mentions_solutions_or_lacks_its_lesson_module_is_refused(tmp_path, monkeypatch):
    (tmp_path / "labs").mkdir()
    (tmp_path / "labs" / "01_x.ipynb").write_text('"see solutions/01_x.ipynb", "from lesson99 import A"')
    monkeypatch.setattr(make_student, "ROOT", tmp_path)
    found = make_student.problems(["labs/01_x.ipynb", "loaderlab/__init__.py"])
    assert any("mentions solutions/" in p for p in found) and any("lesson99" in p for p in found), found
