"""Figures come from the record (#35.3): every measured figure that README.md, the cheat sheet,
the recipes, the answers or the claims ledger quotes appears in the stored output of the
notebook it belongs to (the row's linked notebooks, the section's notebook; a lab's solution
counts with its notebook), or of any notebook where the place names none.

A "figure" here is what a measurement reads as: a ratio (`16.7×`, `2.0x`), a count (`47 of
64`, `2,000 of 10,000`) or a share (`36 %`). Not measurements, so not checked: a bound (after
≥ ≤ < >), an estimate (after "about" or ≈), arithmetic (`8 MB × (2 × 3 + 1)`), and the
claims ledger's paraphrase of the article (only its "measured" column is checked). The
ALLOWED list names the few figures that read like measurements but are not, each with why.
Re-recording a notebook so that its output changes a quoted figure fails this test: regenerate
(docs/claims.md: `python tools/claims.py`) or correct the doc.
"""

from __future__ import annotations

import json
import re

from course_code import ROOT

from tools.links import output_text

DOCS = ["README.md", "docs/cheatsheet.md", "docs/recipes.md", "docs/answers.md", "docs/claims.md"]
NUMBER = r"\d{1,3}(?:[,  ]\d{3})+|\d+(?:\.\d+)?"  # 10 000, 2,000, 16.7
FIGURE = re.compile(
    rf"(?<![\w.,])(?P<ratio>{NUMBER})\s?(?:×|x(?!\w))(?!\s?[\d(])"  # 16.7×, not 8 × (2 + 1)
    rf"|(?<![\w.,])(?P<count>{NUMBER}) of (?P<total>{NUMBER})(?![\d.])"
    rf"|(?<![\w.,])(?P<share>{NUMBER})\s?%"
)
NOT_MEASURED = re.compile(r"(?:[≥≤<>≈~]|\babout|\bAbout|\bat least|\bat most|\bup to)\s*$")
# (file, figure as normalised below, why it is not a measurement)
ALLOWED = [
    ("README.md", "36%", "the class share computed from 0.2/1.0 weights (09 prints 35.7 %)"),
    ("README.md", "50%", "the balance the article expected, not a measurement"),
    ("docs/claims.md", "50%", "C18: the share inverse frequency aims at (a bound)"),
    ("docs/answers.md", "1.5×", "the doctor's threshold for a warning (notebook 17), not a measurement"),
    ("docs/answers.md", "1×", "notebook 16's exercise: what threads would reach on 8 cores, a prediction"),
    ("docs/answers.md", "4×", "lab 03's target speed-up (its contract), not a measurement"),
]


def number(text: str) -> str:
    return f"{float(re.sub(r'[,  ]', '', text)):g}"


def figures(text: str) -> list[tuple[str, int]]:
    """(normalised figure, offset) of each measured-looking figure in ``text``."""
    found = []
    for m in FIGURE.finditer(text):
        if NOT_MEASURED.search(text[max(0, m.start() - 12) : m.start()]):
            continue
        if m["ratio"]:
            found.append((f"{number(m['ratio'])}×", m.start()))
        elif m["count"]:
            found.append((f"{number(m['count'])} of {number(m['total'])}", m.start()))
        else:
            found.append((f"{number(m['share'])}%", m.start()))
    return found


def recorded() -> dict[str, set[str]]:
    """{notebook number: every figure its stored outputs print} for notebooks/ and solutions/
    (a lab's solution counts with the notebook of its number)."""
    seen: dict[str, set[str]] = {}
    for folder in ("notebooks", "solutions"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            for cell in json.loads(path.read_text())["cells"]:
                if cell["cell_type"] == "code":
                    seen.setdefault(path.name[:2], set()).update(f for f, _ in figures(output_text(cell)))
    return seen


SCOPE_HEADING = re.compile(r"^#{2,3} (?:Notebook |Lab )?(\d\d)\b")
NOTEBOOK_LINK = re.compile(r"notebooks/(\d\d)_\w+\.ipynb")


def quoted(doc: str) -> list[tuple[int, str, str, set[str] | None]]:
    """(line number, figure, line, the notebooks it may come from) of each figure ``doc`` quotes.

    The notebooks: those a ledger or course-map row links; those of the current section of the
    answers and recipes (`### Notebook 13 · ...`, `## 13 · ...`); else any (None). The claims
    ledger's paraphrase of the article (its claim column) is not checked."""
    found, section = [], None
    for n, line in enumerate((ROOT / doc).read_text(encoding="utf-8").splitlines(), 1):
        heading = SCOPE_HEADING.match(line)
        if heading or line.startswith("## "):
            section = {heading.group(1)} if heading else None
        text, scope = line, section
        if doc == "docs/claims.md":
            cells = line.split(" | ")
            text = cells[3] if line.startswith("| C") and len(cells) >= 5 else ""
        if NOTEBOOK_LINK.search(line) and line.startswith("|"):  # a table row: its own notebooks
            scope = set(NOTEBOOK_LINK.findall(line))
        found += [(n, figure, line.strip(), scope) for figure, _ in figures(text)]
    return found


def test_figures_are_recognised():
    text = (
        "15.3x alone, 2.0× stepped; 47 of 64 wrong; 2,000 of 10,000; 36 % and 8%; ≥ 1.3× bound; 8 × (2 + 1)"
    )
    assert [f for f, _ in figures(text)] == ["15.3×", "2×", "47 of 64", "2000 of 10000", "36%", "8%"]


def test_every_quoted_figure_is_in_a_stored_output():
    seen, allowed = recorded(), {(doc, figure) for doc, figure, _ in ALLOWED}
    missing = []
    for doc in DOCS:
        for n, figure, line, scope in quoted(doc):
            printed = set().union(*(seen.get(number, set()) for number in (scope or seen)))
            if figure not in printed and (doc, figure) not in allowed:
                where = f"notebooks {', '.join(sorted(scope))}" if scope else "any notebook"
                missing.append(f"{doc}:{n}: {figure!r}, not printed by {where}, in: {line[:150]}")
    assert not missing, (
        f"{len(missing)} quoted figures appear in no notebook's stored output (print "
        f"them, regenerate, or correct the doc):\n" + "\n".join(missing)
    )


def test_the_allowlist_is_small_and_used():
    assert len(ALLOWED) <= 8
    for doc, figure, _ in ALLOWED:
        assert figure in {f for _, f, _, _ in quoted(doc)}, f"{doc}: {figure!r} is allowed, no longer quoted"
