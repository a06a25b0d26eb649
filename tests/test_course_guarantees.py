"""Course-wide guarantees that hold for every notebook and solution.

- Each one runs top to bottom with workers started by ``forkserver`` and by ``spawn`` (how
  macOS and Windows run it; both `make test-spawn`): errors are failures, outputs are not
  compared. `make test` runs each notebook once, by fork, with the spawn guard (conftest.py).
- Output checking stays meaningful: at most a quarter of a notebook's code cells are excluded
  from nbval's comparison.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from course_code import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
IGNORING_TAGS = {"nbval-ignore-output", "nbval-skip"}
IGNORING_MARKERS = re.compile(r"^\s*#\s*(NBVAL_IGNORE_OUTPUT|NBVAL_SKIP|PYTEST_VALIDATE_IGNORE_OUTPUT)", re.M)
MAX_IGNORED_SHARE = 0.25


def _ids(paths):
    return [f"{p.parent.name}/{p.name}" for p in paths]


def ignored_share(path: Path) -> tuple[int, int]:
    """Return (ignored code cells, code cells) of a notebook."""
    cells = [
        c
        for c in json.loads(path.read_text())["cells"]
        if c["cell_type"] == "code" and "".join(c["source"]).strip()
    ]
    ignored = [
        c
        for c in cells
        if IGNORING_TAGS & set(c.get("metadata", {}).get("tags", []))
        or IGNORING_MARKERS.search("".join(c["source"]))
    ]
    return len(ignored), len(cells)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_at_most_a_quarter_of_code_cells_escape_output_comparison(path, record_property):
    ignored, total = ignored_share(path)
    record_property("ignored_share", f"{ignored}/{total}")
    print(f"{path.name}: {ignored}/{total} code cells not compared")
    assert total and ignored <= MAX_IGNORED_SHARE * total, (
        f"{path.name}: {ignored} of {total} code cells are excluded from comparison (max 25 %)"
    )


def _executor():
    from tools import execute_notebooks

    return execute_notebooks


# The forkserver pass runs the notebooks only. A solution's workers run code its
# checker starts: five checkers fork whatever the start method (the student's class lives in the
# notebook's __main__, which only a forked worker can see), one spawns, three solutions start no
# workers, and the checkers' own tests cover both kinds of start. The spawn pass (`make
# test-spawn`, before a release) runs every notebook and solution with spawn.
# Notebooks whose every DataLoader that starts workers names its start method (06 compares fork
# with spawn and forkserver, 12 compares all three), or starts no workers at all (09): the
# default start method never reaches a worker, so the forkserver pass would re-run the same
# code. test_the_left_out_notebooks_never_use_the_default_start_method keeps that true.
OWN_START_METHODS = {"06_copy_on_write_memory", "09_weighted_sampling", "12_start_methods"}
SECOND_PASS = [p for p in NOTEBOOKS if p.parent.name == "notebooks" and p.stem not in OWN_START_METHODS]


def dataloader_calls(source: str) -> list[str]:
    """The text of every ``DataLoader(...)`` call in a cell or module, parentheses balanced."""
    calls = []
    for match in re.finditer(r"\bDataLoader\(", source):
        depth, end = 0, match.end() - 1
        for end in range(match.end() - 1, len(source)):
            depth += {"(": 1, ")": -1}.get(source[end], 0)
            if depth == 0:
                break
        calls.append(source[match.start() : end + 1])
    return calls


def _run_with(method: str, path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LOADERLAB_START_METHOD", method)
    monkeypatch.setenv("LOADERLAB_TEST_MODE", "1")
    _executor().execute(path, timeout=240, write=False)


@pytest.mark.parametrize("stem", sorted(OWN_START_METHODS))
def test_the_left_out_notebooks_never_use_the_default_start_method(stem):
    path = ROOT / "notebooks" / f"{stem}.ipynb"
    sources = [
        c["source"] if isinstance(c["source"], str) else "".join(c["source"])
        for c in json.loads(path.read_text())["cells"]
        if c["cell_type"] == "code"
    ]
    sources += [p.read_text() for p in (ROOT / "notebooks").glob(f"lesson{stem[:2]}*.py")]
    calls = [call for source in sources for call in dataloader_calls(source)]
    assert calls, f"{stem} builds no DataLoader: is it still the notebook OWN_START_METHODS means?"
    default = [call for call in calls if "num_workers" in call and "multiprocessing_context" not in call]
    assert not default, f"{stem} starts workers with the default start method: {default[0][:80]}..."


@pytest.mark.forkserver
@pytest.mark.parametrize("path", SECOND_PASS, ids=_ids(SECOND_PASS))
def test_runs_under_forkserver(path, monkeypatch):
    """Workers get the Dataset pickled and re-import the notebook's modules, as under spawn,
    but fork from a server that imported torch once (`loaderlab.setup()` preloads it), so the
    pass costs seconds per notebook instead of one torch import per worker."""
    _run_with("forkserver", path, monkeypatch)


@pytest.mark.spawn
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_runs_under_the_spawn_start_method(path, monkeypatch):
    _run_with("spawn", path, monkeypatch)
