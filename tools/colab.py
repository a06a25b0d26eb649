"""The Colab cell: ``python tools/colab.py notebooks/*.ipynb`` puts it first in each notebook.

Colab opens one notebook in an empty ``/content``: the course's package, the lesson modules of
``notebooks/`` and the labs' ``../notebooks`` imports are not there. The cell below, run first,
does on Colab only (``google.colab`` imported, or ``COLAB_RELEASE_TAG`` set): clone the course
(``LOADERLAB_REPO``, depth 1) into ``/content/loaderlab`` unless it is there, install it into
Colab's Python (``pip install -r requirements.txt -e .`` without the Jupyter server, ipykernel
and jupyterlab, which Colab has and must keep; torch's CPU build unless the runtime has a GPU),
change into the notebook's folder and put it and the course on ``sys.path``, so
``%%writefile lessonNN.py`` writes beside the lessons and every import works without a restart.
Everywhere else, and where the notebook already runs in its folder of a course (the cell run
again, the grader's copy of the course), it does nothing and prints nothing (nbval's stored
output stays empty).

The cell's source is generated from ``TEMPLATE`` alone (a module cannot be imported before the
clone): this command writes it into notebooks (replacing the cell it wrote before: safe to
rerun), ``tools/make_labs.py`` into every lab, and tests/test_colab.py fails when a notebook or
a lab lacks the current cell. The cell is the first code cell, after the title.
``--check`` exits 1 when a notebook lacks the current cell.

Variables the cell reads (for tests, or another host): ``LOADERLAB_REPO`` (the URL to clone),
``LOADERLAB_COLAB_DIR`` (where; default /content/loaderlab), ``LOADERLAB_COLAB_NO_INSTALL=1``
(skip pip: the tests' simulated Colab; they run pip's branch with ``PIP_DRY_RUN=1``), and
``TORCH_INDEX`` as ``make setup`` reads it (a mirror of the CPU index; ``default``: the usual one).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
# The one place of the course's address: its host sets it here, then reruns this command and
# `python tools/make_labs.py`.
LOADERLAB_REPO = "https://github.com/loaderlab/loaderlab.git"
MARK = "loaderlab-colab"  # the cell's metadata key: how a rerun finds the cell to replace
TEMPLATE = """\
#@title On Colab, run this cell first: it fetches and installs the course (elsewhere it does nothing)
def _on_colab(folder):
    import os
    import subprocess
    import sys
    from pathlib import Path
    if "google.colab" not in sys.modules and "COLAB_RELEASE_TAG" not in os.environ:
        return
    if Path.cwd().name == folder and Path("..", "loaderlab", "__init__.py").is_file():
        return  # already in a course (run again, or the grader's copy)
    course = Path(os.environ.get("LOADERLAB_COLAB_DIR", "/content/loaderlab"))
    if not (course / "tools" / "colab.py").is_file():
        repo = os.environ.get("LOADERLAB_REPO", "@REPO@")
        subprocess.run(["git", "clone", "-q", "--depth", "1", repo, str(course)], check=True)
    stamp, wanted = course / ".colab-installed", (course / "requirements.txt").read_text()
    if os.environ.get("LOADERLAB_COLAB_NO_INSTALL") != "1" and (
            not stamp.is_file() or stamp.read_text() != wanted):
        # what the notebooks import, at the course's versions; not the Jupyter server (ipykernel,
        # jupyterlab): Colab runs its own, which a newer one would break
        (course / ".colab-requirements.txt").write_text("\\n".join(
            line for line in wanted.splitlines() if not line.startswith(("ipykernel", "jupyterlab"))))
        # torch's CPU build (0.2 GB, not 2.7 GB) unless there is a GPU; TORCH_INDEX as in install.md
        index = os.environ.get("TORCH_INDEX", "default" if Path("/dev/nvidia0").exists() else
                               "https://download.pytorch.org/whl/cpu")
        cpu = [] if index == "default" else ["--extra-index-url", index]
        dists = {"numpy": "numpy", "torch": "torch", "matplotlib": "matplotlib", "PIL": "pillow"}
        loaded = {dist: sys.modules[name].__version__ for name, dist in dists.items() if name in sys.modules}
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-r", ".colab-requirements.txt",
                        "-e", ".", *cpu], cwd=course, check=True)
        stamp.write_text(wanted)
        from importlib.metadata import version
        if any(version(name) != old for name, old in loaded.items()):
            raise RuntimeError("installed: now restart (Runtime > Restart session), run this cell again")
    os.chdir(course / folder)
    sys.path[:0] = [p for p in (str(course / folder), str(course)) if p not in sys.path]
    print(f"the course is in {course}; this notebook runs in {course / folder}")


_on_colab("@FOLDER@")
del _on_colab"""


def source(folder: str) -> str:
    """The cell's source for a notebook in ``folder`` of the course ('notebooks' or 'labs')."""
    return TEMPLATE.replace("@REPO@", LOADERLAB_REPO).replace("@FOLDER@", folder)


def cell(folder: str) -> nbformat.NotebookNode:
    new = nbformat.v4.new_code_cell(
        source(folder),
        metadata={MARK: True, "cellView": "form"},  # Colab shows the title only
    )
    new["id"] = "colab-setup"  # fixed, so a rerun writes the same file
    return new


def _is_colab_cell(c) -> bool:
    return c.get("metadata", {}).get(MARK) is True or (
        c.cell_type == "code" and c.source.startswith(TEMPLATE.split("\n", 1)[0])
    )


def insert(nb: nbformat.NotebookNode, folder: str) -> nbformat.NotebookNode:
    """Put the current Colab cell first, after the title (a first markdown cell), removing any
    earlier one; return ``nb``. Idempotent: a second run changes nothing."""
    nb.cells = [c for c in nb.cells if not _is_colab_cell(c)]
    nb.cells.insert(1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0, cell(folder))
    return nb


def has_current_cell(nb: nbformat.NotebookNode, folder: str) -> bool:
    """True when ``nb`` has exactly one Colab cell, the current one, first after its title."""
    at = 1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0
    cells = [c for c in nb.cells if _is_colab_cell(c)]
    return (
        len(cells) == 1
        and len(nb.cells) > at
        and nb.cells[at] is cells[0]
        and cells[0].source == source(folder)
        and not cells[0].get("outputs")
    )


def folder_of(path: Path) -> str:
    """The course folder a notebook lives in: the name of its parent folder."""
    return path.resolve().parent.name


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python tools/colab.py",
        description="Put the current Colab cell first in each notebook (idempotent).",
    )
    parser.add_argument("notebooks", nargs="+", type=Path, metavar="NOTEBOOK.ipynb")
    parser.add_argument("--check", action="store_true", help="only say which notebooks lack the current cell")
    args = parser.parse_args(argv)
    check, paths = args.check, args.notebooks
    stale = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if has_current_cell(nb, folder_of(path)):
            continue
        stale.append(path)
        if not check:
            nbformat.write(insert(nb, folder_of(path)), path)
    if check:
        for path in stale:
            print(f"{path} lacks the current Colab cell: run `python tools/colab.py {path}`")
        return 1 if stale else 0
    print(f"colab: {len(stale)} of {len(paths)} notebook(s) given the current Colab cell")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
