# ruff: noqa: E501  (the table holds one claim per line, as the ledger shows it)
"""Write docs/claims.md, the claims ledger, from the notebooks' stored outputs (#35.3).

Usage: python tools/claims.py            write docs/claims.md
       python tools/claims.py --check    exit 1 (and say why) when docs/claims.md is not current

Each claim's verdict and measured figure are the notebook's printed verdict line, as stored in
its outputs: `Verdict Cn: <holds|holds with a nuance|stale|wrong>: <what was measured>` (a line
that omits the verdict takes it from the notebook's `**Verdict Cn — <verdict>:**` paragraph).
The first evidence link is the section whose cell printed it (JupyterLab's anchor form, as
every notebook link); the other sections a claim cites are listed below by notebook number and
section number. A claim whose notebook prints no verdict line yet keeps a hand-written row in
PENDING: tests/test_claims_ledger.py fails while any is left, and tests/test_figures.py checks
every figure of such a row against the notebooks' stored outputs. Re-record a notebook, run this
tool: the ledger cannot keep a stale figure (the test compares it with what this tool writes).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

try:  # imported as tools.claims (the tests)
    from tools.course_files import notebooks_in, numbered
    from tools.links import headings, notebook_anchor, output_text
except ImportError:  # run as a script, `python tools/claims.py` (make claims): its folder is on sys.path
    from course_files import notebooks_in, numbered  # type: ignore[no-redef]
    from links import headings, notebook_anchor, output_text  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "docs" / "claims.md"
VERDICTS = ("holds with a nuance", "holds", "stale", "wrong")
PRINTED = re.compile(r"^Verdict (C\d+[ab]?)\s*[:—–]\s*(.*\S)\s*$", re.M)
MARKDOWN_VERDICT = re.compile(r"\*\*Verdict (C\d+[ab]?)\s*[—:–-]\s*(holds with a nuance|holds|stale|wrong)")

HEADER = """\
# Claims ledger

The course began from a popular article on PyTorch's DataLoader. Every factual claim it makes
(C1–C21, listed in the team's `CLAIMS.md`) is paraphrased below in our words, with the verdict
that the course *measured* on torch 2.13 (CPU), the figure that decides it, and the notebook
section where you can rerun the evidence. Verdicts: **holds**, **holds with a nuance**,
**stale** (true for old torch only) or **wrong**. The verdict and the figure of
each row are the line its notebook prints (`Verdict Cn: ...`), copied from the stored run by
`tools/claims.py`; timings move with your hardware, counts do not.

| id | claim (paraphrased) | verdict | measured | evidence |
|---|---|---|---|---|
"""

# (id, the claim paraphrased, the sections it cites: (notebook number, section number))
CLAIMS: list[tuple[str, str, list[tuple[str, int]]]] = [
    (
        "C1",
        "A hand-written loop shuffles, batches, loads and stacks in one thread, so a costly `__getitem__` leaves the accelerator waiting.",
        [("01", 4)],
    ),
    (
        "C2",
        "DataLoader is a scheduler: sampler → dataset → collate_fn → optional workers and prefetching.",
        [("01", 3)],
    ),
    (
        "C3",
        "With `drop_last=False` the last batch can be tiny and a batch of 1 breaks BatchNorm; drop it for training, keep it for validation.",
        [("02", 3)],
    ),
    ("C4", "`shuffle=True` is a RandomSampler; `sampler=` with `shuffle=True` raises.", [("02", 5)]),
    ("C5", "Use `shuffle=False` to debug with fixed batches.", [("02", 6)]),
    (
        "C6",
        "`num_workers` defaults to 0; start near 4; too many workers cost memory and file handles and can slow things.",
        [("03", 3), ("15", 2)],
    ),
    (
        "C7",
        "`prefetch_factor` (default 2) is batches per worker; raising it smooths jittery reads at a memory cost.",
        [("03", 4)],
    ),
    (
        "C8",
        "`pin_memory=True` speeds host→GPU copies; pinned memory is hard to get when RAM is tight.",
        [("19", 2)],
    ),
    (
        "C9",
        'Inject transforms; return consistent types; `convert("RGB")` avoids grayscale/RGBA shape errors.',
        [("04", 1)],
    ),
    ("C10", "Caching preprocessed tensors roughly doubled throughput.", [("04", 2)]),
    ("C11", "Default collate cannot stack variable lengths; pad and mask in `collate_fn`.", [("05", 2)]),
    (
        "C12",
        "fork shares pages copy-on-write; *writes* copy them per worker; keep dataset data read-only.",
        [("06", 4)],
    ),
    (
        "C13",
        "An unexhausted iterator leaves workers alive and can hang at exit; use `for`, or `del it` + `gc.collect()`.",
        [("20", 3)],
    ),
    (
        "C14",
        "`persistent_workers=True` saves per-epoch start-up, but workers keep stale dataset state.",
        [("20", 4), ("19", 1)],
    ),
    (
        "C15",
        "Forked workers inherit the RNG state, so `random`/NumPy augmentations repeat; seed them from `torch.initial_seed()`.",
        [("07", 2)],
    ),
    (
        "C16",
        "For reproducibility pass `generator=torch.Generator().manual_seed(seed)` and reset it every epoch.",
        [("07", 6), ("07", 7)],
    ),
    (
        "C17",
        'Worker errors surface as "worker exited unexpectedly" with the stack lost; lambdas fail to pickle; shared connections break.',
        [("08", 2), ("08", 1), ("12", 3)],
    ),
    (
        "C18",
        "Weights 0.2 / 1.0 with replacement balance a 90/10 set; without replacement `num_samples` cannot exceed the dataset.",
        [("09", 6)],
    ),
    (
        "C19",
        "DistributedSampler gives disjoint shards covering the dataset; without `set_epoch` every epoch has the same order.",
        [("10", 3)],
    ),
    ("C20a", "With an IterableDataset `shuffle` has no effect.", [("11", 3)]),
    (
        "C20b",
        "With an IterableDataset each worker replays the stream unless it shards.",
        [("11", 2), ("11", 5)],
    ),
    (
        "C21",
        "2 → 8 workers plus `pin_memory` took GPU use from 30 % to 85 %; start from batch 64, 4 workers, pin_memory, drop_last, prefetch 4, persistent workers.",
        [("19", 3)],
    ),
]

# claims whose notebook prints no verdict line yet: (verdict, measured), written by hand
PENDING: dict[str, tuple[str, str]] = {}


def notebook(number: str, root: Path = ROOT) -> Path:
    """The notebook whose file name starts with ``number`` (`01` -> notebooks/01_....ipynb)."""
    return numbered(number, "notebooks", root)


def section_heading(path: Path, number: int) -> str:
    """The heading of section ``number`` of a notebook (`## 3. ...`)."""
    markdown = "\n\n".join(
        "".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "markdown"
    )
    for heading in headings(markdown):
        if re.match(rf"^{number}\.\s", heading):
            return heading
    raise LookupError(f"{path.name} has no section {number}")


def link(path: Path, heading: str) -> str:
    """`[NN §k](../notebooks/NN_name.ipynb#anchor)` for a section heading."""
    number = re.match(r"^(\d+)\.", heading)
    label = f"{path.name[:2]} §{number.group(1)}" if number else f"{path.name[:2]}, {heading}"
    return f"[{label}](../notebooks/{path.name}#{notebook_anchor(heading)})"


def printed_verdicts(root: Path = ROOT) -> dict[str, dict]:
    """{claim id: {verdict, measured, notebook, heading}} from every notebook's stored outputs."""
    found: dict[str, dict] = {}
    for path in notebooks_in("notebooks", root):
        cells = json.loads(path.read_text())["cells"]
        markdown = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        labels = dict(MARKDOWN_VERDICT.findall(markdown))
        heading: str | None = None
        for cell in cells:
            if cell["cell_type"] == "markdown":
                numbered: list[str | None] = [h for h in headings("".join(cell["source"])) if h[:1].isdigit()]
                heading = (numbered or [heading])[-1]
                continue
            for cid, rest in PRINTED.findall(output_text(cell)):
                verdict = next((v for v in VERDICTS if re.match(rf"{v}\s*[:—–]", rest)), None)
                measured = re.sub(rf"^{verdict}\s*[:—–]\s*", "", rest) if verdict else rest
                if cid in found:
                    raise ValueError(f"{cid} is printed twice: {found[cid]['notebook'].name} and {path.name}")
                found[cid] = {
                    "verdict": verdict or labels.get(cid),
                    "measured": measured,
                    "notebook": path,
                    "heading": heading,
                }
    return found


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def ledger(root: Path = ROOT) -> str:
    """The text of docs/claims.md, as the notebooks' stored outputs give it now."""
    printed = printed_verdicts(root)
    rows = []
    for cid, claim, cited in CLAIMS:
        evidence = []
        if cid in printed:
            seen = printed[cid]
            if seen["verdict"] is None:
                raise ValueError(f"{cid}: {seen['notebook'].name} prints no verdict ({', '.join(VERDICTS)})")
            verdict, measured = seen["verdict"], seen["measured"]
            if seen["heading"] is None:
                raise ValueError(f"{cid}: printed before any numbered section of {seen['notebook'].name}")
            evidence.append(link(seen["notebook"], seen["heading"]))
        elif cid in PENDING:
            verdict, measured = PENDING[cid]
        else:
            raise LookupError(f"{cid}: no notebook prints `Verdict {cid}: ...` and PENDING has no row")
        for number, section in cited:
            path = notebook(number, root)
            text = link(path, section_heading(path, section))
            if text not in evidence:
                evidence.append(text)
        rows.append(f"| {cid} | {claim} | {verdict} | {cell(measured)} | {', '.join(evidence)} |")
    return HEADER + "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python tools/claims.py",
        description="Write docs/claims.md from the notebooks' printed verdict lines.",
    )
    parser.add_argument("--check", action="store_true", help="only say whether docs/claims.md is current")
    args = parser.parse_args(argv)
    text = ledger()
    if args.check:
        if LEDGER.read_text() != text:
            print("docs/claims.md is not what the notebooks print: run python tools/claims.py")
            return 1
        print("docs/claims.md is current")
        return 0
    LEDGER.write_text(text)
    print(f"wrote {LEDGER.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
