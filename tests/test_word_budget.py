"""The reading budget (#28, tightened by #36): at most 1,600 words of markdown and 32 code cells per
notebook, and 30,000 words for the course (every word of every markdown cell, code spans and
examples included: the strictest count), so a learner reads a notebook in one sitting.
Methodology belongs in docs/how-we-measure.md."""

from __future__ import annotations

import json

from course_code import ROOT

NOTEBOOK_WORDS, NOTEBOOK_CODE_CELLS, COURSE_WORDS = 1_600, 32, 30_000


def words(path) -> int:
    cells = json.loads(path.read_text())["cells"]
    return sum(len("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")


def test_every_notebook_and_the_course_stay_within_the_reading_budget():
    counts = {p.name: words(p) for p in sorted((ROOT / "notebooks").glob("*.ipynb"))}
    over = {name: n for name, n in counts.items() if n > NOTEBOOK_WORDS}
    assert not over, f"over {NOTEBOOK_WORDS} words of prose: {over}"
    assert sum(counts.values()) <= COURSE_WORDS, f"the course has {sum(counts.values())} words of prose"
    assert len(counts) >= 19


def test_every_notebook_has_at_most_32_code_cells():
    colab = "loaderlab-colab"  # the Colab set-up cell (tools/colab.py) is not the lesson's
    cells = {
        p.name: sum(
            c["cell_type"] == "code" and not c["metadata"].get(colab)
            for c in json.loads(p.read_text())["cells"]
        )
        for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
    }
    over = {name: n for name, n in cells.items() if n > NOTEBOOK_CODE_CELLS}
    assert not over, f"over {NOTEBOOK_CODE_CELLS} code cells: {over}"
