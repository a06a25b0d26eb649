"""#28's reading budget: at most 1,800 words of markdown per notebook and 25,000 for the course
(every word of every markdown cell, code spans and examples included: the strictest count), so a
learner reads a notebook in one sitting. Methodology belongs in docs/how-we-measure.md."""

from __future__ import annotations

import json

from course_code import ROOT

NOTEBOOK_WORDS, COURSE_WORDS = 1_800, 25_000


def words(path) -> int:
    cells = json.loads(path.read_text())["cells"]
    return sum(len("".join(c["source"]).split()) for c in cells if c["cell_type"] == "markdown")


def test_every_notebook_and_the_course_stay_within_the_reading_budget():
    counts = {p.name: words(p) for p in sorted((ROOT / "notebooks").glob("*.ipynb"))}
    over = {name: n for name, n in counts.items() if n > NOTEBOOK_WORDS}
    assert not over, f"over {NOTEBOOK_WORDS} words of prose: {over}"
    assert sum(counts.values()) <= COURSE_WORDS, f"the course has {sum(counts.values())} words of prose"
    assert len(counts) >= 19
