"""`make student` (tools/make_student.py): the zip for students holds the labs, the notebooks with
the lesson modules the labs import, the package and the setup files, and no answers. ~1 s."""

from __future__ import annotations

import json
import re
import subprocess
import sys
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
    for answer in (
        "solutions/01_loop_to_dataloader.ipynb",
        "solutions/lab01.py",
        "docs/answers.md",
        "docs/instructor.md",
        "tests/test_grade.py",
        "conftest.py",
        "labs/lab01.py",
    ):
        assert not make_student.keep(answer), answer


@pytest.mark.course
def test_the_bundle_has_what_a_student_runs(bundle):
    names, labs = bundle
    for needed in (
        "README.md",
        "Makefile",
        "requirements.txt",
        "pyproject.toml",
        "loaderlab/__init__.py",
        "loaderlab/checks/report.py",
        "tools/lab_server.py",
        "notebooks/00_start_here.ipynb",
        # `make lab` and `py tools/course.py lab` (Windows), preflight before install
        "tools/course.py",
        "tools/install.py",
        "tools/wheelhouse.py",  # `make wheelhouse`, a learner command
        "tools/preflight.py",
        "tools/__init__.py",
        "loaderlab/cores.py",
        "docs/install.md",
        "jupyter/overrides.json",
    ):
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


LINK = re.compile(r"\[[^\]]+\]\(([^)\s]+)\)")


@pytest.fixture(scope="module")
def unzipped(tmp_path_factory):
    """The student zip unpacked into an empty folder, as a student would."""
    out = tmp_path_factory.mktemp("zip") / "student.zip"
    assert make_student.main(["--out", str(out)]) == 0
    folder = tmp_path_factory.mktemp("student-home")
    with zipfile.ZipFile(out) as z:
        z.extractall(folder)
    return folder / make_student.FOLDER


def _markdown(path):
    if path.suffix == ".md":
        return path.read_text(encoding="utf-8")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def test_the_unzipped_course_stands_alone_every_link_resolves(unzipped):
    broken = []
    for path in sorted([*unzipped.rglob("*.md"), *unzipped.rglob("*.ipynb")]):
        for target in LINK.findall(_markdown(path)):
            file = target.split("#")[0]
            if not file or "://" in file or file.startswith("mailto:"):
                continue
            if not (path.parent / file).exists():
                broken.append(f"{path.relative_to(unzipped)} -> {target}")
    assert not broken, "links to files the zip lacks:\n" + "\n".join(broken)


def test_the_unzipped_readme_has_no_answers_and_only_learner_commands(unzipped):
    from test_documented_commands import COMMANDS, documented

    readme = (unzipped / "README.md").read_text(encoding="utf-8")
    for word in (
        "solutions/",
        "instructor.md",
        "answers.md",
        "make test",
        "make student",
        "make html",
        "CONTRIBUTING",
        "{course_map}",
        "{troubleshooting}",
    ):
        assert word not in readme, word
    assert "| 00 | [start here](notebooks/00_start_here.ipynb)" in readme  # the course map, copied
    assert "**Workers hang:**" in readme  # README's troubleshooting, copied
    import test_documented_commands

    saved = test_documented_commands.DOCUMENTS
    test_documented_commands.DOCUMENTS = ["docs/student/README.md"]
    try:
        commands = documented()
    finally:
        test_documented_commands.DOCUMENTS = saved
    untested = [c for c in commands if c not in COMMANDS]
    assert not untested, f"the student README documents commands no test runs: {untested}"


def test_the_unzipped_entry_point_offers_only_the_learner_commands(unzipped):
    targets = re.findall(r"^([\w-]+):", (unzipped / "Makefile").read_text(), re.M)
    assert targets == list(make_student.LEARNER_TARGETS), targets
    shown = subprocess.run(
        [sys.executable, "tools/course.py", "--help"],
        cwd=unzipped,
        capture_output=True,
        text=True,
        timeout=60,
    )
    listed = re.findall(r"^  ([\w-]+)\s", shown.stdout.split("commands:")[1], re.M)
    assert listed == list(make_student.LEARNER_TARGETS), shown.stdout
    refused = subprocess.run(
        [sys.executable, "tools/course.py", "test"], cwd=unzipped, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "maintainer's command" in refused.stderr, refused.stderr
    dry = subprocess.run(
        [sys.executable, "tools/course.py", "lab", "--dry-run"],
        cwd=unzipped,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert dry.returncode == 0 and "lab_server" in dry.stdout, dry.stdout + dry.stderr
