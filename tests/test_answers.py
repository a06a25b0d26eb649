"""docs/answers.md answers every "Exercise:" and "Going further" question of the notebooks and labs.

Text only (no notebook runs): each question is found in the markdown cells of notebooks/ and
solutions/ (labs/ is generated from solutions/), and must have a heading
`### Notebook NN · Exercise K` or `### Lab NN · Going further K` in docs/answers.md, whose quote
starts like the question and which is followed by an answer. A figure an answer quotes from
a notebook is written between « and », exactly as printed, and must be in that notebook's
stored outputs (a lab's: its solution's, then those of the notebook with its number): when a
re-recording changes it, the test names the value printed now.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from course_code import ROOT

ANSWERS = ROOT / "docs" / "answers.md"
SOURCES = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
ITEM = re.compile(r"^(?:[-*]|\d+\.)\s+")
HEADING = re.compile(r"^### ((?:Notebook|Lab) \d\d · (?:Exercise|Going further) \d+)\s*$", re.M)
QUOTE_CHARS = 60  # the quote must start with this much of the question


def normalized(text: str) -> str:
    return " ".join(ITEM.sub("", text.strip()).split())


def questions(path: Path) -> dict[str, str]:
    """Return {heading: question text} for one notebook or solution."""
    where = f"{'Notebook' if path.parent.name == 'notebooks' else 'Lab'} {path.name[:2]}"
    found: dict[str, list[list[str]]] = {"Exercise": [], "Going further": []}
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "markdown":
            continue
        section, current, further_paragraphs, further_items = None, None, [], []
        for line in cell.source.splitlines() + [""]:
            if line.startswith("#"):
                section = "Going further" if re.match(r"#+\s*Going further", line) else None
                current = None
            elif not line.strip():
                current = None
            elif re.match(r"(\*\*)?Exercise:", line):
                current = [line]
                found["Exercise"].append(current)
            elif section and ITEM.match(line):
                current = [line]
                further_items.append(current)
            elif current is not None:
                current.append(line)
            elif section:
                current = [line]
                further_paragraphs.append(current)
        # a "Going further" written as bullets: one question per bullet; else one per paragraph
        found["Going further"] += further_items or further_paragraphs
    return {
        f"{where} · {kind} {k}": normalized(" ".join(lines))
        for kind, items in found.items()
        for k, lines in enumerate(items, start=1)
    }


def answered() -> dict[str, tuple[str, str]]:
    """Return {heading: (quoted question, answer text)} from docs/answers.md."""
    text = ANSWERS.read_text()
    parts = HEADING.split(text)
    result = {}
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        body = re.split(r"^#{1,3} ", body, flags=re.M)[0]
        quote = [line.lstrip(">").strip() for line in body.splitlines() if line.startswith(">")]
        answer = [line for line in body.splitlines() if line.strip() and not line.startswith(">")]
        result[heading] = (normalized(" ".join(quote)), " ".join(answer))
    return result


ASKED = {heading: text for path in SOURCES for heading, text in questions(path).items()}


def test_the_notebooks_ask_questions_the_test_can_see():
    assert any("Exercise" in h for h in ASKED) and any("Going further" in h for h in ASKED)


@pytest.mark.parametrize("heading", sorted(ASKED), ids=lambda h: h.replace(" · ", ": "))
def test_every_question_has_an_answer(heading):
    answers = answered()
    assert heading in answers, (
        f"docs/answers.md has no '### {heading}' for: {ASKED[heading][:120]}… — add the heading, "
        f"the question quoted (> …) and a short answer"
    )
    quote, answer = answers[heading]
    start = ASKED[heading][:QUOTE_CHARS]
    assert quote.startswith(start), (
        f"'### {heading}' quotes a question that has changed: the notebook now asks "
        f"{ASKED[heading][:120]!r}… — check the answer and update the quote"
    )
    assert len(answer) >= 100, f"'### {heading}' has no answer under its quote"


def test_no_answer_to_a_question_that_is_gone():
    stale = sorted(set(answered()) - set(ASKED))
    assert not stale, f"docs/answers.md answers questions no notebook asks any more: {stale}"


def test_the_reader_finds_exercises_and_bullets(tmp_path):
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("Text.\n\nExercise: first\nline two.\n\n## Further reading"),
            nbformat.v4.new_markdown_cell(
                "## Going further\n\n- one?\n  more\n- two?\n\n## Next\n\n- not a question"
            ),
        ]
    )
    path = tmp_path / "solutions" / "42_x.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    assert questions(path) == {
        "Lab 42 · Exercise 1": "Exercise: first line two.",
        "Lab 42 · Going further 1": "one? more",
        "Lab 42 · Going further 2": "two?",
    }


FIGURE = re.compile(r"«([^»]+)»")
NUMBER = re.compile(r"\d[\d,.]*")


def stored_outputs(heading: str) -> str:
    """Return the stored text outputs of the notebook(s) a heading's figures are quoted from."""
    kind, number = heading.split()[:2]
    paths = sorted((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    if kind == "Lab":
        paths = sorted((ROOT / "solutions").glob(f"{number}_*.ipynb")) + paths
    texts = []
    for path in paths:
        for cell in nbformat.read(path, as_version=4).cells:
            for out in cell.get("outputs", []):
                text = out.get("text") or out.get("data", {}).get("text/plain", "")
                texts.append(text if isinstance(text, str) else "".join(text))
    return " ".join(" ".join(texts).split())


def quoted_figures() -> list[tuple[str, str]]:
    """Return (heading, figure) for every «figure» in docs/answers.md."""
    parts = HEADING.split(ANSWERS.read_text())
    pairs = zip(parts[1::2], parts[2::2], strict=True)
    return [(heading, " ".join(figure.split())) for heading, body in pairs for figure in FIGURE.findall(body)]


def test_answers_quote_figures_that_the_test_can_see():
    assert len(quoted_figures()) >= 4, quoted_figures()


def printed_now(figure: str, outputs: str) -> str | None:
    """Return what the outputs print in the place of ``figure`` (its words, other numbers), or None."""
    shape = NUMBER.sub("@@", re.escape(figure)).replace("@@", r"\d[\d,.]*")
    found = re.search(shape, outputs)
    return found.group(0) if found else None


@pytest.mark.parametrize(("heading", "figure"), quoted_figures(), ids=lambda x: x.replace(" · ", ": "))
def test_a_quoted_figure_is_in_the_stored_outputs(heading, figure):
    outputs = stored_outputs(heading)
    now = printed_now(figure, outputs)
    quoted = f"'### {heading}' quotes «{figure}»"
    assert figure in outputs, (
        f"{quoted}; the stored outputs now print «{now}»: update the answer"
        if now
        else f"{quoted}, which the notebook no longer prints"
    )


def test_a_changed_figure_is_named_with_the_value_printed_now():
    outputs = "batches 2-11: load 0.15 s + compute 0.18 s"
    assert printed_now("load 0.13 s", outputs) == "load 0.15 s"
    assert printed_now("kept 18 of 150", outputs) is None
