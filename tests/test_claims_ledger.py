"""docs/claims.md: one row per claim C1–C21 with a verdict, a measured figure and a link to the
notebook section that shows the evidence — and that section really mentions the claim. A claim
with two halves that get two verdicts has a row per half (C20a, C20b).

The ledger is generated (#35.3): tools/claims.py copies each claim's verdict and figure from the
`Verdict Cn: ...` line its notebook prints, as stored; the ledger must be what the tool writes
now, so re-recording a notebook cannot leave a stale figure in it. Links use JupyterLab's anchor
form, as every link to a notebook section (tests/test_links.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from course_code import ROOT

from tools import claims
from tools.links import notebook_anchor

LEDGER = ROOT / "docs" / "claims.md"
VERDICTS = ("holds with a nuance", "holds", "stale", "wrong")
ROW = re.compile(r"^\|\s*(C\d+[ab]?)\s*\|(.*)\|\s*$", re.M)
HALVES = {"C20": ["C20a", "C20b"]}  # C20: shuffle has no effect (a); workers replay a stream (b)
LINK = re.compile(r"\]\(\.\./(notebooks/[^)#]+\.ipynb)#([^)]+)\)")


def sections(notebook: Path) -> dict[str, str]:
    """Return {anchor: text of that section (its markdown and code, up to the next heading)}."""
    result: dict[str, str] = {}
    current = None
    for cell in json.loads(notebook.read_text())["cells"]:
        source = "".join(cell["source"])
        for line in source.splitlines():
            match = re.match(r"^#{1,6}\s+(.*)", line) if cell["cell_type"] == "markdown" else None
            if match:
                current = notebook_anchor(match.group(1))
                result.setdefault(current, "")
            elif current is not None:
                result[current] += line + "\n"
        if cell["cell_type"] == "code" and current is not None:  # what the cell printed, too
            result[current] += claims.output_text(cell)
    return result


def rows() -> dict[str, str]:
    return {cid: rest for cid, rest in ROW.findall(LEDGER.read_text())}


def test_every_claim_has_exactly_one_row_with_a_verdict():
    found = ROW.findall(LEDGER.read_text())
    ids = [cid for cid, _ in found]
    expected = [half for i in range(1, 22) for half in HALVES.get(f"C{i}", [f"C{i}"])]
    assert ids == expected, f"rows found: {ids}"
    for cid, rest in found:
        cells = [c.strip() for c in rest.split("|")]
        assert len(cells) == 4, f"{cid}: expected claim | verdict | measured | evidence"
        verdict = cells[1].strip("* ").lower()
        assert verdict.startswith(VERDICTS), f"{cid}: verdict {cells[1]!r} not in {VERDICTS}"
        assert re.search(r"\d", cells[2]), f"{cid}: the measured figure has no number"


def test_each_evidence_link_points_to_a_notebook_section_that_mentions_the_claim():
    for cid, rest in rows().items():
        links = LINK.findall(rest)
        assert links, f"{cid}: no link to a notebook section"
        for notebook, anchor in links:
            path = ROOT / notebook
            assert path.exists(), f"{cid}: {notebook} does not exist"
            found = sections(path)
            assert anchor in found, f"{cid}: {notebook} has no section #{anchor} (has {sorted(found)[:8]}...)"
            assert re.search(rf"\b{cid}\b", found[anchor]), (
                f"{cid}: section #{anchor} of {notebook} never mentions {cid}"
            )


def test_the_ledger_is_what_the_notebooks_print():
    written, now = LEDGER.read_text(), claims.ledger()
    stale = [
        f"{old}\n  now: {new}"
        for old, new in zip(written.splitlines(), now.splitlines(), strict=False)
        if old != new
    ]
    assert written == now, (
        "docs/claims.md differs from the notebooks' stored verdict lines: run "
        "python tools/claims.py\n" + "\n".join(stale[:5])
    )


def test_every_verdict_is_printed_by_its_notebook():
    """Each claim's verdict and figure come from a printed `Verdict Cn: <verdict>: ...` line;
    a row still typed by hand (tools/claims.py PENDING) names the section that should print it."""
    printed = claims.printed_verdicts()
    missing = []
    for cid, _claim, cited in claims.CLAIMS:
        if cid not in printed:
            number, section = cited[0]
            verdict, measured = claims.PENDING[cid]
            missing.append(
                f"{cid}: notebook {number} §{section} should print "
                f"`Verdict {cid}: {verdict}: {measured[:90]}...`"
            )
        elif not printed[cid]["measured"] or not re.search(r"\d", printed[cid]["measured"]):
            missing.append(f"{cid}: {printed[cid]['notebook'].name} prints no figure after its verdict")
    leftover = sorted(set(claims.PENDING) & set(printed))
    assert not leftover, f"printed now, remove from tools/claims.py PENDING: {leftover}"
    assert not missing, f"{len(missing)} claims still typed by hand:\n" + "\n".join(missing)
