"""docs/instructor.md: its schedules name notebooks and labs that exist, and their times add up;
every notebook slot has a card (objectives, teach live, skip or assign, lab, fast finishers); every
schedule opens with install triage; the helper routine, timing failures and the survey are there.

Text only: each "### Schedule · …" section states its length ("90 minutes", "3 hours") and has
a table whose rows give a start (H:MM from the beginning) and a length in minutes.
"""

from __future__ import annotations

import json
import re

import pytest
from course_code import ROOT

GUIDE = ROOT / "docs" / "instructor.md"
PATH = re.compile(r"(?:\.\./)?((?:notebooks|labs|solutions)/[\w.-]+\.ipynb)")
ROW = re.compile(r"^\| (\d+):(\d\d) \| (\d+) \| (.*?) \|", re.M)
LAB_SLOT = re.compile(r"^Lab (\d\d) · \[[^\]]*\]\(\.\./(labs/[\w.-]+\.ipynb)\)")
SOLVE = re.compile(r"about (\d+) min to solve")


def schedules() -> dict[str, tuple[int, list[tuple[int, int, str]]]]:
    """Return {title: (length in minutes, [(start, minutes, what), ...])}."""
    parts = re.split(r"^### Schedule · (.+)$", GUIDE.read_text(), flags=re.M)
    result = {}
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        body = re.split(r"^#{1,3} ", body, flags=re.M)[0]
        length = re.search(r"(\d+) (minutes|hours)\b", title)
        assert length, f"schedule '{title}' does not state its length in minutes or hours"
        minutes = int(length.group(1)) * (60 if length.group(2) == "hours" else 1)
        rows = [(int(h) * 60 + int(m), int(n), what) for h, m, n, what in ROW.findall(body)]
        result[title] = (minutes, rows)
    return result


def test_three_schedules():
    lengths = sorted(length for length, _ in schedules().values())
    assert lengths == [90, 180, 480], f"expected 90 min, half day (3 h) and full day schedules, got {lengths}"


def test_every_notebook_and_lab_named_exists():
    missing = sorted({p for p in PATH.findall(GUIDE.read_text()) if not (ROOT / p).exists()})
    assert not missing, f"docs/instructor.md names files that do not exist: {missing}"


@pytest.mark.parametrize("title", sorted(schedules()), ids=lambda t: t.split(" (")[0])
def test_schedule_times_add_up_within_its_length(title):
    length, rows = schedules()[title]
    assert rows, f"schedule '{title}' has no rows"
    assert rows[0][0] == 0, f"schedule '{title}' should start at 0:00"
    for (start, minutes, what), (next_start, _, _) in zip(rows, rows[1:], strict=False):
        assert start + minutes == next_start, (
            f"'{title}': '{what[:40]}' starts at {start} min and lasts {minutes}, "
            f"but the next row starts at {next_start}"
        )
    total = sum(minutes for _, minutes, _ in rows)
    assert total <= length, f"'{title}' adds up to {total} min, more than its {length}"
    whats = " ".join(what for _, _, what in rows)
    assert "Notebook" in whats and "Lab" in whats and "Break" in whats


@pytest.mark.parametrize("title", sorted(schedules()), ids=lambda t: t.split(" (")[0])
def test_each_lab_slot_is_at_least_its_header_time(title):
    for _, minutes, what in schedules()[title][1]:
        match = LAB_SLOT.match(what)
        if match:
            header = (ROOT / match.group(2)).read_text()
            solve = SOLVE.search(header)
            assert solve, f"{match.group(2)}'s header gives no 'about N min to solve'"
            assert minutes >= int(solve.group(1)), (
                f"'{title}': Lab {match.group(1)} gets {minutes} min, its header says {solve.group(1)}"
            )


CARD = re.compile(r"^### Slot · Notebook (\d\d) \(", re.M)
CARD_FIELDS = ("**Objectives:**", "**Teach live:**", "**Skip or assign:**", "**Lab:**", "**Fast finishers:**")
NOTEBOOK_SLOT = re.compile(r"^Notebook (\d\d) · ")


def cards() -> dict[str, str]:
    """Return {notebook number: its slot card's text}."""
    parts = CARD.split(GUIDE.read_text())
    pairs = zip(parts[1::2], parts[2::2], strict=True)
    return {number: re.split(r"^#{1,3} ", body, flags=re.M)[0] for number, body in pairs}


@pytest.mark.parametrize("title", sorted(schedules()), ids=lambda t: t.split(" (")[0])
def test_every_notebook_slot_has_a_card_with_objectives_teach_skip_lab_and_fast_finishers(title):
    found = cards()
    for _, _, what in schedules()[title][1]:
        match = NOTEBOOK_SLOT.match(what)
        if match:
            card = found.get(match.group(1))
            number = match.group(1)
            assert card, f"'{title}': Notebook {number} has no '### Slot · Notebook {number}' card"
            missing = [field for field in CARD_FIELDS if field not in card]
            assert not missing, f"the card of notebook {match.group(1)} lacks {missing}"


@pytest.mark.parametrize("title", sorted(schedules()), ids=lambda t: t.split(" (")[0])
def test_every_schedule_starts_with_15_to_20_minutes_of_install_triage(title):
    start, minutes, what = schedules()[title][1][0]
    assert start == 0 and 15 <= minutes <= 20 and what.startswith("Install triage"), (start, minutes, what)


def test_the_guide_has_triage_helpers_timing_failures_and_a_survey():
    text = GUIDE.read_text()
    for heading in (
        "## Install triage",
        "## Helpers and sticky notes",
        "## When a timing assertion fails on a busy laptop",
        "## The survey",
    ):
        assert re.search(rf"^{re.escape(heading)}", text, re.M), f"docs/instructor.md lacks '{heading}'"


SECTION = re.compile(r"§(\d+)(?:–\d+)? \"([^\"]+)\"")


def headings(notebook: str) -> dict[int, str]:
    """{N: title} of a notebook's numbered sections ("## N. title")."""
    path = next((ROOT / "notebooks").glob(f"{notebook}_*.ipynb"))
    cells = json.loads(path.read_text())["cells"]
    markdown = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    lines = [line for text in markdown for line in text.splitlines()]
    return {int(m.group(1)): m.group(2) for line in lines if (m := re.match(r"## (\d+)\. (.*)", line))}


def test_every_section_a_card_quotes_is_that_notebooks_section():
    parts = re.split(r"^### Slot · Notebook (\d\d)", GUIDE.read_text(), flags=re.M)
    wrong = []
    for notebook, card in zip(parts[1::2], parts[2::2], strict=True):
        titles = headings(notebook)
        for number, quoted in SECTION.findall(" ".join(card.split())):
            title = titles.get(int(number), "")
            if quoted.rstrip(".…") not in title:
                wrong.append(f"{notebook} §{number} {quoted!r} (the notebook: {title!r})")
    assert not wrong, "a card quotes a section title the notebook does not have: " + "; ".join(wrong)
