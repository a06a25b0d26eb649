"""The grader (`python tools/grade.py`) on a folder of lab 01 submissions: a correct one under
another name, one in a subfolder, an untouched lab, checker cells deleted (with a wrong answer and a
fake verdict), stubs that replace the checker, the checks package, `print` and IPython hooks, a
notebook that kills its kernel, a corrupt file, a syntax error, no lab metadata, an answer that
loops forever (its own short --timeout), and lab 05 graded per part with `--lab`. Each is graded
right, and no process the grader started is left. The command as the docs write it runs as a
subprocess. Three grader runs in-process (~1-2 min on 2 busy cores), two as commands (no kernel)."""

from __future__ import annotations

import copy
import csv
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from course_code import ROOT  # noqa: E402

from tools import grade

LAB = "01_loop_to_dataloader.ipynb"  # the fastest lab to grade (~3 s a submission on 2 idle cores)
LOOP_TIMEOUT = 6  # seconds the looping answer may run
JANE, JOE = "Jane Roe_4711_assignsubmission_file_", "Joe Bloggs_4712_assignsubmission_file_"
CANVAS = "doejane_LATE_12345_67890_lab01.ipynb"


def _edit(nb, old: str, new: str):
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb.cells if old in c.source)
    cell.source = cell.source.replace(old, new)
    return nb


def _stub_with(cell: str):
    """The untouched lab 01 plus a student cell ``cell`` before its check."""
    nb = nbformat.read(ROOT / "labs" / LAB, as_version=4)
    nb.cells.insert(-2, nbformat.v4.new_code_cell(cell))
    return nb


REPLACES_CHECKER = """import sys
import loaderlab.checks.lab01 as loops
loops.check_loop_to_loader = lambda *args: print("✅ same batches") or True
fake = type(sys)("loaderlab.checks")
fake.check_loop_to_loader = loops.check_loop_to_loader
sys.modules["loaderlab.checks"] = fake
import loaderlab
loaderlab.checks = fake"""

PRINTS_VERDICT = """import builtins, sys
real_print = builtins.print
builtins.print = lambda *args, **kwargs: real_print("✅ same batches as the hand-written loop")
def vote(*args):
    sys.__stdout__.write("✅ same batches\\n")
    real_print("✅ same batches")
for event in ("pre_execute", "post_execute", "pre_run_cell", "post_run_cell"):
    get_ipython().events.register(event, vote)
real_print("x" * 3_000_000)  # more output than the grader keeps"""


# Stubs that, before the check, replace what the grader's in-kernel code (tools/grade_kernel.py)
# uses to compute, encode, sign and return the verdict, or what the checker computes with: each
# would turn the untouched stub (or a wrong answer) into a pass if the check code used it.
PATCHES = {
    "json_dumps": """import json
real_dumps = json.dumps
def forged(obj, *args, **kwargs):
    if isinstance(obj, dict) and "passed" in obj:
        obj = {**obj, "passed": True, "error": None}
    return real_dumps(obj, *args, **kwargs)
json.dumps = forged""",
    "hmac_new": """import hmac
real_new = hmac.new
hmac.new = lambda key, msg=None, digestmod=None: real_new(b"known", msg, digestmod)""",
    "hashlib_sha256": """import hashlib
hashlib.sha256 = hashlib.md5""",
    "import_module": """import importlib
real_import = importlib.import_module
def fake_import(name, package=None):
    module = real_import(name, package)
    if name.startswith("loaderlab.checks"):
        for attr in dir(module):
            if attr.startswith("check_"):
                setattr(module, attr, lambda *args, **kwargs: True)
    return module
importlib.import_module = fake_import
importlib.invalidate_caches = lambda: None""",
    "io_and_contextlib": """import contextlib, io
class Loud(io.StringIO):
    def getvalue(self):
        return "✅ same batches as the hand-written loop"
io.StringIO = Loud
contextlib.redirect_stdout = lambda target: contextlib.nullcontext()""",
    "builtins": """import builtins
real_getattr = builtins.getattr
builtins.getattr = lambda obj, name, *default: ((lambda *a, **k: True) if name.startswith("check_")
                                                else real_getattr(obj, name, *default))
builtins.vars = lambda *args: {}
builtins.eval = lambda *args, **kwargs: ((), {})""",
    "entry_replaced": """for name, value in list(globals().items()):
    if name.startswith("_") and len(name) == 33 and callable(value):
        globals()[name] = lambda *args: '{"passed": true, "out": "", "error": null}|' + "0" * 64""",
}


def _submissions(folder: Path) -> None:
    lab = nbformat.read(ROOT / "labs" / LAB, as_version=4)
    answer = nbformat.read(ROOT / "solutions" / LAB, as_version=4)
    nbformat.write(answer, folder / "no_metadata.ipynb")  # a solution: no loaderlab metadata
    answer.metadata["loaderlab"] = lab.metadata["loaderlab"]
    nbformat.write(answer, folder / "Jane Doe - final (2).ipynb")  # renamed: graded by metadata
    (folder / JANE).mkdir()  # Moodle's export: a folder per student, every file the same name
    nbformat.write(answer, folder / JANE / "submission.ipynb")
    (folder / JOE).mkdir()
    (folder / JOE / "submission.ipynb").write_text("not json")  # the other student's upload broke
    (folder / CANVAS).write_text('{"cells": [')  # Canvas's name for a late, truncated upload
    nbformat.write(lab, folder / "untouched.ipynb")
    nbformat.write(
        _edit(answer, "return self.features[index]", "return self.features[index]]"), folder / "syntax.ipynb"
    )
    cheat = _edit(answer, "sampler=sampler)", "shuffle=True)")  # wrong: a new order
    cheat.cells = [c for c in cheat.cells if "check_loop_to_loader(make_loader)" not in c.source]
    cheat.cells.append(
        nbformat.v4.new_code_cell(
            'check_loop_to_loader = lambda f: print("✅ fine")\nprint("✅ same batches")'
        )
    )
    nbformat.write(cheat, folder / "checks_deleted.ipynb")
    nbformat.write(_stub_with(REPLACES_CHECKER), folder / "replaces_checker.ipynb")
    nbformat.write(_stub_with(PRINTS_VERDICT), folder / "prints_verdict.ipynb")
    nbformat.write(_stub_with("import os\nos._exit(0)"), folder / "exits.ipynb")
    (folder / "patches").mkdir()
    for name, patch in PATCHES.items():
        nbformat.write(_stub_with(patch), folder / "patches" / f"{name}.ipynb")
    (folder / "corrupt.ipynb").write_text('{"cells": [')  # a truncated upload
    loop = _edit(answer, "    return DataLoader(", "    while True:\n        pass\n    return DataLoader(")
    nbformat.write(loop, folder.parent / "loops.ipynb")
    parts = nbformat.read(ROOT / "solutions" / "05_pad_collate_and_buckets.ipynb", as_version=4)
    parts = _edit(
        parts,
        "    rng = random.Random(seed * 1_000_003 + epoch)",
        '    raise NotImplementedError("your code here")',
    )  # part 2 left a stub
    nbformat.write(parts, folder.parent / "parts.ipynb")  # no metadata: graded with --lab 05


def _leftovers(work: Path) -> list[str]:
    """Processes whose working directory is under ``work`` (the grader's kernels ran there)."""
    left = []
    for proc in psutil.process_iter(["pid", "cwd", "cmdline"]):
        if (proc.info["cwd"] or "").startswith(str(work)):
            left.append(f"{proc.info['pid']} {' '.join(proc.info['cmdline'] or [])[:80]}")
    return left


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("grade")
    folder, work = base / "class", base / "work"
    folder.mkdir()
    work.mkdir()
    _submissions(folder)
    saved, tempfile.tempdir = tempfile.tempdir, str(work)  # the grader's course copies go here
    children = {p.pid for p in psutil.Process().children(recursive=True)}
    try:
        start = time.monotonic()
        status = grade.main([str(folder), "--csv", str(base / "grades.csv"), "--timeout", "120"])
        seconds = time.monotonic() - start
        start = time.monotonic()
        loop_status = grade.main(
            [str(base / "loops.ipynb"), "--csv", str(base / "loop.csv"), "--timeout", str(LOOP_TIMEOUT)]
        )
        loop_seconds = time.monotonic() - start
        parts_status = grade.main(
            [str(base / "parts.ipynb"), "--csv", str(base / "parts.csv"), "--lab", "05"]
        )
    finally:
        tempfile.tempdir = saved
    new_children = [p for p in psutil.Process().children(recursive=True) if p.pid not in children]
    with open(base / "grades.csv", newline="", encoding="utf-8") as f:
        header = f.readline().strip()
        f.seek(0)
        rows = {str(Path(r["submission"]).relative_to(folder)): r for r in csv.DictReader(f)}
    with open(base / "loop.csv", newline="", encoding="utf-8") as f:
        loop_row = next(csv.DictReader(f))
    with open(base / "parts.csv", newline="", encoding="utf-8") as f:
        parts_row = next(csv.DictReader(f))
    feedback = {p.name: p.read_text(encoding="utf-8") for p in (base / "feedback").iterdir()}
    return dict(
        status=status,
        loop_status=loop_status,
        parts_status=parts_status,
        header=header,
        rows=rows,
        loop=loop_row,
        parts=parts_row,
        seconds=seconds,
        loop_seconds=loop_seconds,
        leftovers=_leftovers(work),
        new_children=new_children,
        feedback=feedback,
        summary=(base / "grades_summary.txt").read_text(encoding="utf-8"),
    )


@pytest.mark.course
def test_every_submission_is_graded_into_the_columns(graded):
    assert graded["status"] == 0 and graded["loop_status"] == 0 and graded["parts_status"] == 0
    assert graded["header"] == "student,submission,lab,points,max_points,passed,reason,part1,part2"
    assert len(graded["rows"]) == 12 + len(PATCHES), graded["rows"]


@pytest.mark.course
def test_a_subfolder_is_searched_and_names_the_student(graded):
    row = graded["rows"][str(Path(JANE) / "submission.ipynb")]
    assert (row["student"], row["lab"], row["passed"], row["reason"]) == ("Jane Roe", "01", "1", ""), row
    assert (row["points"], row["max_points"]) == ("10", "10"), row
    other = graded["rows"][str(Path(JOE) / "submission.ipynb")]
    assert (other["student"], other["passed"], other["points"]) == ("Joe Bloggs", "0", "0"), other


@pytest.mark.course
def test_every_submission_gets_a_feedback_file_a_student_can_read(graded):
    feedback = graded["feedback"]
    mine = [name for name in feedback if not name.startswith(("loops_", "parts_"))]  # the other two runs
    assert len(mine) == len(graded["rows"]), sorted(feedback)  # one student's files: _2, _3, ...
    assert feedback["Jane_Roe_lab01.txt"].startswith("loaderlab lab 01: 10 of 10 points ✅")
    stub = feedback["untouched_lab01.txt"]
    assert "0 of 10 points ❌" in stub and "❌ check_loop_to_loader: not attempted yet" in stub, stub
    wrong = feedback["checks_deleted_lab01.txt"]
    assert "in another order" in wrong and "Hint: notebook 01" in wrong, wrong
    assert "Why: not a Jupyter notebook" in feedback["doejane_labXX.txt"], sorted(feedback)


@pytest.mark.course
def test_the_summary_counts_each_lab_and_its_most_common_failures(graded):
    summary = graded["summary"]
    assert "lab 01, most common failures:" in summary, summary
    assert "× unfinished stub: check_loop_to_loader says not attempted yet" in summary, summary


@pytest.mark.course
@pytest.mark.parametrize("name", ["replaces_checker.ipynb", "prints_verdict.ipynb"])
def test_a_stub_that_replaces_the_checker_print_or_hooks_is_still_a_stub(graded, name):
    row = graded["rows"][name]
    assert row["passed"] == "0" and row["reason"].startswith("unfinished stub: check_loop_to_loader"), row


@pytest.mark.course
@pytest.mark.parametrize("name", sorted(PATCHES))
def test_a_stub_that_patches_what_the_check_code_uses_is_still_a_stub(graded, name):
    row = graded["rows"][f"patches/{name}.ipynb"]
    assert row["passed"] == "0", row
    reason = row["reason"]
    assert reason.startswith("unfinished stub") or "verdict was not the checker's" in reason, row


@pytest.mark.course
def test_output_beyond_the_cap_is_dropped_and_said(graded):
    assert "output beyond 2 MB was not kept" in graded["rows"]["prints_verdict.ipynb"]["reason"]


@pytest.mark.course
def test_a_notebook_that_kills_its_kernel_is_a_row_with_its_cell(graded):
    row = graded["rows"]["exits.ipynb"]
    assert row["passed"] == "0" and row["reason"].startswith("the kernel died in cell "), row
    assert "NoSuchProcess" not in row["reason"], row


@pytest.mark.course
def test_a_corrupt_file_is_a_row_with_its_reason(graded):
    row = graded["rows"]["corrupt.ipynb"]
    assert (row["lab"], row["passed"]) == ("", "0"), row
    assert row["reason"].startswith("not a Jupyter notebook"), row
    assert graded["rows"][CANVAS]["student"] == "doejane"


@pytest.mark.course
def test_a_two_part_lab_gets_a_grade_per_part_and_lab_overrides_the_metadata(graded):
    row = graded["parts"]
    assert (row["lab"], row["passed"], row["part1"], row["part2"]) == ("05", "0", "1", "0"), row
    assert (row["points"], row["max_points"]) == ("5", "10"), row
    assert row["reason"].startswith("unfinished stub: check_bucket_batches"), row


@pytest.mark.course
def test_a_correct_answer_under_any_file_name_passes(graded):
    row = graded["rows"]["Jane Doe - final (2).ipynb"]
    assert (row["lab"], row["passed"], row["reason"]) == ("01", "1", ""), row


@pytest.mark.course
def test_an_untouched_lab_is_an_unfinished_stub(graded):
    row = graded["rows"]["untouched.ipynb"]
    assert row["passed"] == "0" and row["reason"].startswith("unfinished stub"), row


@pytest.mark.course
def test_a_syntax_error_is_named_with_its_cell(graded):
    row = graded["rows"]["syntax.ipynb"]
    assert row["passed"] == "0" and row["reason"].startswith("syntax error in cell"), row
    assert "lab01.py" in row["reason"], row  # the %%writefile module the import failed on


@pytest.mark.course
def test_deleted_and_faked_checks_are_still_run_by_the_official_checker(graded):
    row = graded["rows"]["checks_deleted.ipynb"]
    assert row["passed"] == "0", row
    assert row["reason"].startswith("check_loop_to_loader: ") and "order" in row["reason"], row


@pytest.mark.course
def test_a_notebook_without_lab_metadata_is_an_unknown_lab(graded):
    row = graded["rows"]["no_metadata.ipynb"]
    assert (row["lab"], row["passed"]) == ("", "0") and row["reason"].startswith("unknown lab"), row


@pytest.mark.course
def test_an_answer_that_loops_forever_stops_at_its_timeout(graded):
    row = graded["loop"]
    assert row["passed"] == "0" and row["reason"].startswith("timeout"), row
    # the timeout, plus starting and killing one kernel (generous: a busy machine)
    assert graded["loop_seconds"] < LOOP_TIMEOUT + 30, graded["loop_seconds"]


@pytest.mark.course
def test_no_process_is_left_behind(graded):
    assert graded["leftovers"] == [], graded["leftovers"]
    assert [p for p in graded["new_children"] if p.is_running()] == []


@pytest.mark.parametrize(
    "argv, says",
    [
        (["missing.ipynb", "--csv", "g.csv"], "no such file"),
        (["ok.ipynb", "--csv", "g.csv", "--lab", "99"], "--lab 99: no such lab"),
        (["ok.ipynb", "--csv", "g.csv", "--timeout", "soon"], "--timeout must be a number"),
        (["ok.ipynb", "--csv", "g.csv", "--timeout", "0"], "--timeout must be > 0"),
        (["ok.ipynb"], "--csv"),
        (["ok.ipynb", "--csv", "nowhere/g.csv"], "writable folder"),
    ],
)
def test_a_usage_error_is_one_sentence_and_exit_2(tmp_path, monkeypatch, capsys, argv, says):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "junk.ipynb").write_text("these are not the notebooks you are looking for")
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "ok.ipynb")
    assert grade.main(argv) == 2
    out, err = capsys.readouterr()
    assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "g.csv").exists()


def test_a_missing_course_kernel_is_one_sentence_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(grade, "kernel_specs", lambda: {"python3": ["python"]})  # tools.course's lookup
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "ok.ipynb")
    assert grade.main([str(tmp_path / "ok.ipynb"), "--csv", str(tmp_path / "g.csv")]) == 2
    err = capsys.readouterr().err
    assert "kernel 'loaderlab' is not registered: run `make setup`" in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "g.csv").exists()


@pytest.mark.parametrize(
    "command",
    [
        "python tools/grade.py submissions/ --csv grades.csv",  # as issue 27 and docs/instructor.md type it
        # as README.md types it; the same two Pythons again: the course tier
        pytest.param(
            "python tools/grade.py submissions/ --csv grades.csv --timeout 120", marks=pytest.mark.course
        ),
    ],
)
def test_the_documented_command_runs_as_typed(tmp_path, command):
    """`python` here is the Python the course's .venv was made from, without the course's packages
    (-S: no site-packages), as an instructor's system Python is: the grader runs itself again
    with the course's Python."""
    (tmp_path / "tools").symlink_to(ROOT / "tools")  # the course's tools/, from a class folder
    (tmp_path / "submissions").mkdir()
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "submissions" / "blank.ipynb")  # no lab: no kernel
    system = [str(Path(sys.base_prefix) / "bin" / "python3"), "-S"]
    lacks = subprocess.run([*system, "-c", "import jupyter_client"], capture_output=True)
    assert lacks.returncode != 0, "the stand-in for a system Python has the notebook tools"
    argv = [*system, *command.split()[1:]]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    with open(tmp_path / "grades.csv", newline="", encoding="utf-8") as f:
        row = next(csv.DictReader(f))
    assert row["passed"] == "0" and row["reason"].startswith("unknown lab"), row


def test_without_a_course_environment_the_grader_says_to_set_up(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(grade, "in_course_env", lambda: False)
    monkeypatch.setattr(grade, "ROOT", tmp_path)  # a course folder without .venv
    assert grade.main(["submissions/", "--csv", "grades.csv"]) == 2
    err = capsys.readouterr().err
    assert "run `make setup`" in err and len(err.strip().splitlines()) == 1, err


def test_the_course_is_read_once_so_a_submission_cannot_change_it_for_the_next(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(ROOT / "loaderlab", root / "loaderlab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "labs", root / "labs")
    (root / "notebooks").mkdir()
    for module in (ROOT / "notebooks").glob("*.py"):
        shutil.copy(module, root / "notebooks" / module.name)
    course = grade.Course(root)  # as grading starts
    (root / "loaderlab" / "checks" / "lab01.py").write_text("check_loop_to_loader = lambda *a: True\n")
    (root / "notebooks" / "lesson03_datasets.py").write_text("# rewritten by a submission\n")
    course.layout(tmp_path / "course")  # what the next submission runs with
    copy = tmp_path / "course" / "package" / "loaderlab" / "checks" / "lab01.py"
    assert copy.read_bytes() == (ROOT / "loaderlab" / "checks" / "lab01.py").read_bytes()
    assert copy.stat().st_mode & 0o222 == 0  # read-only (root may still write: the checks get a newer copy)
    lesson = tmp_path / "course" / "notebooks" / "lesson03_datasets.py"
    assert lesson.read_bytes() == (ROOT / "notebooks" / "lesson03_datasets.py").read_bytes()
    grade._set_writable(tmp_path / "course", True)  # so that pytest can remove it


def test_every_lab_names_its_lab_in_its_metadata():
    for path in sorted((ROOT / "labs").glob("*.ipynb")):
        meta = nbformat.read(path, as_version=4).metadata.get("loaderlab", {})
        assert meta.get("lab") == path.name[:2], f"{path.name}: run tools/make_labs.py"
        assert grade.official_lab(meta["lab"]) is not None
