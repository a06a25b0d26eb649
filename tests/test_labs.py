"""Every lab (generated from its solution) runs top to bottom and only says "not attempted yet"."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
LABS = sorted((ROOT / "labs").glob("*.ipynb"))
VERDICTS = ("✅", "❌", "⏳")


def _printed_lines(nb) -> list[str]:
    lines = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                lines += out["text"].splitlines()
    return lines


@pytest.mark.skipif(not LABS, reason="no labs yet")
@pytest.mark.parametrize("path", LABS, ids=[p.name for p in LABS])
def test_lab_stub_runs_without_traceback_and_reports_not_attempted(path, monkeypatch):
    monkeypatch.setenv("LOADERLAB_TEST_MODE", "1")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="loaderlab",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{path.name} shows a traceback: {errors[0]['ename']}"
    verdicts = [line for line in _printed_lines(nb) if line.startswith(VERDICTS)]
    assert verdicts, f"{path.name}: no checker ran"
    assert all(line.startswith("⏳") for line in verdicts), f"{path.name}: {verdicts}"


def test_every_solution_has_its_lab_and_solution_regions():
    solutions = sorted((ROOT / "solutions").glob("*.ipynb"))
    for solution in solutions:
        assert (ROOT / "labs" / solution.name).exists(), f"labs/{solution.name} missing: run make labs"
        source = "".join(c.source for c in nbformat.read(solution, as_version=4).cells)
        assert source.count("### BEGIN SOLUTION") == source.count("### END SOLUTION") > 0, solution.name
