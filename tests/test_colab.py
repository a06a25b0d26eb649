"""The Colab cell (tools/colab.py, #38): every notebook and lab starts with the current one; it
does nothing and prints nothing off Colab; on a simulated Colab (the course cloned elsewhere
through a file:// URL, an empty working folder, COLAB_RELEASE_TAG set, pip skipped) it ends in
the notebook's folder of the course with the lesson, lab and package imports working."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from course_code import ROOT

from tools import colab

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
LABS = sorted((ROOT / "labs").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS + LABS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_notebook_and_lab_starts_with_the_current_colab_cell(path):
    nb = nbformat.read(path, as_version=4)
    assert colab.has_current_cell(nb, path.parent.name), (
        f"{path.parent.name}/{path.name} lacks the current Colab cell: run "
        + ("`python tools/make_labs.py`" if path.parent.name == "labs" else f"`python tools/colab.py {path}`")
    )
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")  # the title first


def test_the_command_is_idempotent_and_replaces_an_older_cell(tmp_path):
    (tmp_path / "notebooks").mkdir()
    path = tmp_path / "notebooks" / "99_x.ipynb"
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# 99 · x"), nbformat.v4.new_code_cell("import torch")]
    )
    nbformat.write(nb, path)
    assert colab.main(["--check", str(path)]) == 1
    assert colab.main([str(path)]) == 0
    first = path.read_text()
    assert colab.main([str(path)]) == 0 and path.read_text() == first  # a rerun changes nothing
    assert colab.main(["--check", str(path)]) == 0
    nb = nbformat.read(path, as_version=4)
    title = colab.source("notebooks").split("\n")[0]
    assert [c.source.split("\n")[0] for c in nb.cells] == ["# 99 · x", title, "import torch"]
    nb.cells[1].source = nb.cells[1].source.replace("/content/loaderlab", "/content/old")  # an older cell
    nbformat.write(nb, path)
    assert colab.main(["--check", str(path)]) == 1
    assert colab.main([str(path)]) == 0 and path.read_text() == first  # replaced, not added


def _run_cell(
    folder: str, env: dict[str, str], cwd: Path, after: str = "", python: str = sys.executable
) -> subprocess.CompletedProcess:
    """The cell's source, then ``after``, in a fresh Python started in ``cwd`` (as a kernel in
    Colab's /content). -I: no PYTHONPATH, so the imports can only come from the cell's work."""
    return subprocess.run(
        [python, "-I", "-c", colab.source(folder) + "\n" + after],
        cwd=cwd,
        env={**{k: v for k, v in os.environ.items() if not k.startswith(("COLAB", "LOADERLAB"))}, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_off_colab_the_cell_does_nothing_and_prints_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("COLAB_RELEASE_TAG", raising=False)
    monkeypatch.chdir(tmp_path)
    for folder in ("notebooks", "labs"):
        namespace, out, path = {}, io.StringIO(), list(sys.path)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            exec(colab.source(folder), namespace)
        assert out.getvalue() == "" and Path.cwd() == tmp_path and sys.path == path
        assert set(namespace) == {"__builtins__"}  # it leaves no name behind
    done = _run_cell("labs", {"LOADERLAB_REPO": "file:///nowhere"}, tmp_path)
    assert done.returncode == 0 and done.stdout == done.stderr == "" and not list(tmp_path.iterdir())


def test_on_colab_inside_a_course_already_the_cell_does_nothing(tmp_path):
    """Run again after it changed folder, or in the grader's copy of the course: no clone."""
    env = {
        "COLAB_RELEASE_TAG": "release-colab-test",
        "LOADERLAB_REPO": "file:///nowhere",
        "LOADERLAB_COLAB_DIR": str(tmp_path / "loaderlab"),
    }
    for folder in ("notebooks", "labs"):
        done = _run_cell(folder, env, ROOT / folder, "import os; print(os.getcwd())")
        assert done.returncode == 0 and done.stdout == f"{ROOT / folder}\n" and not done.stderr, done
    assert not list(tmp_path.iterdir())


AFTER = """
import importlib.util, json, os, sys
if os.path.basename(os.getcwd()) == "labs":
    sys.path.insert(0, "../notebooks")  # as the labs import the lesson modules
with open("lab99.py", "w") as f:  # as %%writefile lab99.py does, then `from lab99 import ...`
    f.write("ANSWER = 42\\n")
import lab99
print(json.dumps({"cwd": os.getcwd(), "lab": lab99.__file__, "answer": lab99.ANSWER,
                  "lesson": os.path.realpath(importlib.util.find_spec("lesson03_datasets").origin),
                  "package": importlib.util.find_spec("loaderlab").origin}))
"""


@pytest.mark.course  # git clones the course and runs the cell twice in a fresh Python: seconds
@pytest.mark.parametrize("folder", ["notebooks", "labs"])
def test_on_a_simulated_colab_it_clones_and_changes_into_the_course(tmp_path, folder):
    content, course = tmp_path / "content", tmp_path / "content" / "loaderlab"
    content.mkdir()
    env = {
        "COLAB_RELEASE_TAG": "release-colab-test",
        "LOADERLAB_REPO": ROOT.as_uri(),  # file://
        "LOADERLAB_COLAB_DIR": str(course),
        "LOADERLAB_COLAB_NO_INSTALL": "1",
    }
    for run in ("the first run clones", "a second run finds the course there"):
        done = _run_cell(folder, env, content, AFTER)
        assert done.returncode == 0, f"{run}: {done.stdout}{done.stderr}"
        lines = done.stdout.splitlines()
        assert lines[0] == f"the course is in {course}; this notebook runs in {course / folder}", lines
        found = json.loads(lines[-1])
        assert found == {
            "cwd": str(course / folder),
            "lab": str(course / folder / "lab99.py"),
            "answer": 42,
            "lesson": str(course / "notebooks" / "lesson03_datasets.py"),
            "package": str(course / "loaderlab" / "__init__.py"),
        }, run
    shallow = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=course, capture_output=True, text=True
    )
    assert shallow.stdout.strip() == "1"  # --depth 1
    assert sorted(p.name for p in content.iterdir()) == ["loaderlab"]  # nothing else in /content


@pytest.mark.course  # a kernel that imports torch: the lab run for real from Colab's /content
def test_a_lab_runs_from_an_empty_folder_on_a_simulated_colab(tmp_path, monkeypatch):
    from tools import execute_notebooks

    content, course = tmp_path / "content", tmp_path / "content" / "loaderlab"
    content.mkdir()
    for name, value in {
        "COLAB_RELEASE_TAG": "release-colab-test",
        "LOADERLAB_REPO": ROOT.as_uri(),
        "LOADERLAB_COLAB_DIR": str(course),
        "LOADERLAB_COLAB_NO_INSTALL": "1",
        "LOADERLAB_TEST_MODE": "1",
    }.items():
        monkeypatch.setenv(name, value)
    # Colab opens the lab alone: the course is not there yet
    nb = nbformat.read(ROOT / "labs" / "07_worker_seeding.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import os, loaderlab\nprint(os.getcwd(), loaderlab.__file__)"))
    execute_notebooks.client(nb, content, timeout=120).execute()  # raises on a cell's error
    last = nb.cells[-1].outputs[0]["text"].split()
    assert last == [str(course / "labs"), str(course / "loaderlab" / "__init__.py")]
    assert (course / "labs" / "lab07.py").is_file()  # its %%writefile landed in the course's labs/
    printed = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "not attempted yet" in printed


PIP_STUB = """import json, os, sys
with open(os.environ["PIP_CALLS"], "a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd()}) + "\\n")
"""


CPU_INDEX = "https://download.pytorch.org/whl/cpu"


@pytest.mark.course  # a venv, a clone and two Pythons each: seconds
@pytest.mark.parametrize(
    "torch_index, extra",
    [
        (None, ["--extra-index-url", CPU_INDEX]),
        ("https://mirror.example/cpu", ["--extra-index-url", "https://mirror.example/cpu"]),
    ],
)
def test_on_a_simulated_colab_pip_installs_all_but_the_jupyter_server(tmp_path, torch_index, extra):
    """The install branch, with Colab's Python standing in as a fresh venv whose pip records
    its arguments: requirements.txt less ipykernel and jupyterlab (Colab runs its own server,
    which a newer one would break), the course editable, torch's CPU index (or TORCH_INDEX);
    once: a second run, the stamp matching, does not call pip. (That pip resolves these pins:
    test_documented_commands runs `pip install --dry-run -r requirements.txt -e .`.)"""
    content, course = tmp_path / "content", tmp_path / "content" / "loaderlab"
    content.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "colab")], check=True)
    site = next((tmp_path / "colab" / "lib").glob("python3*/site-packages"))
    (site / "pip").mkdir()
    (site / "pip" / "__main__.py").write_text(PIP_STUB)
    calls = tmp_path / "pip-calls.jsonl"
    env = {
        "COLAB_RELEASE_TAG": "release-colab-test",
        "LOADERLAB_REPO": ROOT.as_uri(),
        "LOADERLAB_COLAB_DIR": str(course),
        "PIP_CALLS": str(calls),
    }
    if torch_index:
        env["TORCH_INDEX"] = torch_index
    for _ in range(2):
        done = _run_cell("notebooks", env, content, python=str(tmp_path / "colab" / "bin" / "python"))
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.splitlines()[-1].startswith("the course is in "), done.stdout
    [call] = [json.loads(line) for line in calls.read_text().splitlines()]  # pip ran once
    assert call == {
        "argv": ["install", "-q", "-r", ".colab-requirements.txt", "-e", ".", *extra],
        "cwd": str(course),
    }
    wanted = (ROOT / "requirements.txt").read_text().splitlines()
    installed = (course / ".colab-requirements.txt").read_text().splitlines()
    assert installed == [line for line in wanted if not line.startswith(("ipykernel", "jupyterlab"))]
    assert any(line.startswith("torch==") for line in installed)
    assert (course / ".colab-installed").read_text() == (ROOT / "requirements.txt").read_text()
