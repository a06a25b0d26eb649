"""The grader (`python tools/grade.py`) on a folder of lab 01 submissions: a correct one under
another name, an untouched lab, checker cells deleted (with a wrong answer and a fake verdict), a
syntax error, no lab metadata, and an answer that loops forever (its own short --timeout). Each is
graded right, and no process the grader started is left. Two grader runs, ~15-25 s in all."""

from __future__ import annotations

import copy
import csv
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from course_code import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import grade  # noqa: E402

LAB = "01_loop_to_dataloader.ipynb"  # the fastest lab to grade (~3 s a submission on 2 idle cores)
LOOP_TIMEOUT = 6  # seconds the looping answer may run


def _edit(nb, old: str, new: str):
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb.cells if old in c.source)
    cell.source = cell.source.replace(old, new)
    return nb


def _submissions(folder: Path) -> None:
    lab = nbformat.read(ROOT / "labs" / LAB, as_version=4)
    answer = nbformat.read(ROOT / "solutions" / LAB, as_version=4)
    nbformat.write(answer, folder / "no_metadata.ipynb")  # a solution: no loaderlab metadata
    answer.metadata["loaderlab"] = lab.metadata["loaderlab"]
    nbformat.write(answer, folder / "Jane Doe - final (2).ipynb")  # renamed: graded by metadata
    nbformat.write(lab, folder / "untouched.ipynb")
    nbformat.write(_edit(answer, "return self.features[index]", "return self.features[index]]"),
                   folder / "syntax.ipynb")
    cheat = _edit(answer, "sampler=sampler)", "shuffle=True)")  # wrong: a new order
    cheat.cells = [c for c in cheat.cells if "check_loop_to_loader(make_loader)" not in c.source]
    cheat.cells.append(nbformat.v4.new_code_cell(
        'check_loop_to_loader = lambda f: print("✅ fine")\nprint("✅ same batches")'))
    nbformat.write(cheat, folder / "checks_deleted.ipynb")
    loop = _edit(answer, "    return DataLoader(", "    while True:\n        pass\n    return DataLoader(")
    nbformat.write(loop, folder.parent / "loops.ipynb")


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
        loop_status = grade.main([str(base / "loops.ipynb"), "--csv", str(base / "loop.csv"),
                                  "--timeout", str(LOOP_TIMEOUT)])
        loop_seconds = time.monotonic() - start
    finally:
        tempfile.tempdir = saved
    new_children = [p for p in psutil.Process().children(recursive=True) if p.pid not in children]
    with open(base / "grades.csv", newline="", encoding="utf-8") as f:
        header = f.readline().strip()
        f.seek(0)
        rows = {Path(r["submission"]).name: r for r in csv.DictReader(f)}
    with open(base / "loop.csv", newline="", encoding="utf-8") as f:
        loop_row = next(csv.DictReader(f))
    return dict(status=status, loop_status=loop_status, header=header, rows=rows, loop=loop_row,
                seconds=seconds, loop_seconds=loop_seconds, leftovers=_leftovers(work),
                new_children=new_children)


@pytest.mark.course
def test_every_submission_is_graded_into_the_four_columns(graded):
    assert graded["status"] == 0 and graded["loop_status"] == 0
    assert graded["header"] == "submission,lab,passed,reason"
    assert len(graded["rows"]) == 5, graded["rows"]


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


@pytest.mark.parametrize("argv, says", [
    (["missing.ipynb", "--csv", "g.csv"], "no such file"),
    (["junk.ipynb", "--csv", "g.csv"], "not a Jupyter notebook"),
    (["ok.ipynb", "--csv", "g.csv", "--timeout", "soon"], "--timeout must be a number"),
    (["ok.ipynb", "--csv", "g.csv", "--timeout", "0"], "--timeout must be > 0"),
    (["ok.ipynb"], "--csv"),
    (["ok.ipynb", "--csv", "nowhere/g.csv"], "writable folder"),
])
def test_a_usage_error_is_one_sentence_and_exit_2(tmp_path, monkeypatch, capsys, argv, says):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "junk.ipynb").write_text("these are not the notebooks you are looking for")
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "ok.ipynb")
    assert grade.main(argv) == 2
    out, err = capsys.readouterr()
    assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "g.csv").exists()


def test_every_lab_names_its_lab_in_its_metadata():
    for path in sorted((ROOT / "labs").glob("*.ipynb")):
        meta = nbformat.read(path, as_version=4).metadata.get("loaderlab", {})
        assert meta.get("lab") == path.name[:2], f"{path.name}: run tools/make_labs.py"
        assert grade.official_lab(meta["lab"]) is not None
