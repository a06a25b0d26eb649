"""One implementation of running a notebook: tools/execute_notebooks.client. The recorder, the lab
tests and the grader all build their client there (nbval runs the test tier's notebooks itself)."""

from __future__ import annotations

import re

import nbformat
from course_code import ROOT
from nbclient import NotebookClient

from tools import execute_notebooks

CONSTRUCTED = re.compile(r"(?<!class )\b\w*NotebookClient\(\s*\w")  # a call, not `class X(NotebookClient)`


def test_every_runner_builds_its_client_in_execute_notebooks():
    sources = [
        *ROOT.glob("tools/*.py"),
        *ROOT.glob("tests/*.py"),
        *ROOT.glob("loaderlab/**/*.py"),
        ROOT / "conftest.py",
    ]
    found = [
        p.relative_to(ROOT).as_posix()
        for p in sources
        if p.name != "test_notebook_execution.py" and CONSTRUCTED.search(p.read_text())
    ]
    assert found == [], f"these build a NotebookClient of their own: {found}"
    for runner in ("tools/grade.py", "tests/test_labs.py"):
        assert "from tools.execute_notebooks import" in (ROOT / runner).read_text(), runner


def test_client_takes_a_subclass_and_options_and_keeps_the_course_settings(tmp_path):
    class Quiet(NotebookClient):
        pass

    nb = nbformat.v4.new_notebook()
    made = execute_notebooks.client(nb, tmp_path, timeout=7, client_class=Quiet, shutdown_kernel="immediate")
    assert type(made) is Quiet and made.shutdown_kernel == "immediate" and made.timeout == 7
    assert made.resources["metadata"]["path"] == str(tmp_path) and not made.store_widget_state
    assert nb.metadata["kernelspec"]["name"] == execute_notebooks.KERNEL


def test_a_failure_report_shows_what_the_failing_cell_printed():
    cell = nbformat.v4.new_code_cell("...")
    text = "helps: True\n\nstops: \x1b[31mFalse\n"
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=text),
        nbformat.v4.new_output("error", ename="AssertionError", evalue="", traceback=[]),
    ]
    assert execute_notebooks.printed(cell) == ["helps: True", "stops: False"]
    assert execute_notebooks.printed(cell, lines=1) == ["stops: False"]
