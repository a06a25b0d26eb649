"""Generate docs/cheatsheet.md from the tested snippet files in docs/snippets/.

Each snippet file's docstring gives the heading (first line) and the prose, and names the
notebook that measures why ("Notebook 07"): the page has one section per notebook topic, in
course order, with that topic's snippets in ORDER. The rest of the file is the code shown. `--check` exits 1 when docs/cheatsheet.md is out of date (a test runs
it), so the page cannot drift from the code that tests/test_cheatsheet.py exercises.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SNIPPETS = ROOT / "docs" / "snippets"
PAGE = ROOT / "docs" / "cheatsheet.md"
ORDER = [
    "first_loader", "loop_to_loader", "drop_last_and_debug_order", "loader_configs",
    "choose_num_workers", "image_dataset", "pad_collate", "bucketing", "cow_safe_storage",
    "packed_rows", "worker_seeding", "reproducible_loader", "timeouts_and_debugging",
    "per_process_resources", "epoch_sampler", "balanced_weights", "undersampling", "ddp_epochs",
    "sharded_iterable", "shuffle_buffer", "main_guard", "start_method_preload", "resume_mid_epoch",
    "data_wait", "profile_loader", "out_of_order", "sharing_strategy", "thread_loader", "loader_limits",
]
HEADER = """# Cheat sheet: copy-paste snippets

Every snippet below is a real file in `docs/snippets/` that the tests (`tests/test_cheatsheet.py`,
`tests/test_snippets_*.py`) import and exercise; this page is generated from those files
(`python tools/make_cheatsheet.py`), so it cannot drift from code that works. The sections follow
the course: each names the notebook that measures why.
"""
NOTEBOOK = re.compile(r"[Nn]otebooks? (\d\d)")


def topic(path: Path) -> str:
    """The number of the first notebook a snippet's docstring names ('07')."""
    match = NOTEBOOK.search(ast.get_docstring(ast.parse(path.read_text())) or "")
    if not match:
        raise SystemExit(f"{path.name}: its docstring names no notebook ('Notebook 07')")
    return match.group(1)


def topic_heading(number: str) -> str:
    """'## 07 · Worker seeds and reproducibility' with a link to the notebook."""
    path = next((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    title = nbformat.read(path, as_version=4).cells[0].source.splitlines()[0].removeprefix("# ")
    return f"## {title}\n\nMeasured in [notebook {number}](../notebooks/{path.name}).\n"


def section(path: Path) -> str:
    source = path.read_text()
    module = ast.parse(source)
    doc = ast.get_docstring(module) or path.stem
    title, _, prose = doc.partition("\n\n")  # the first paragraph is the heading
    title = " ".join(title.split())
    body_start = module.body[1].lineno - 1 if len(module.body) > 1 else 0
    code = "\n".join(source.splitlines()[body_start:]).strip()
    return f"### {title.strip().rstrip('.')}\n\n{prose.strip()}\n\n```python\n{code}\n```\n"


def render() -> str:
    missing = sorted({p.stem for p in SNIPPETS.glob("*.py")} - set(ORDER))
    if missing:
        raise SystemExit(f"snippets not placed in ORDER: {missing}")
    topics: dict[str, list[str]] = {}
    for name in ORDER:
        topics.setdefault(topic(SNIPPETS / f"{name}.py"), []).append(name)
    parts = [HEADER]
    for number in sorted(topics):
        parts.append("\n" + topic_heading(number))
        parts.extend("\n" + section(SNIPPETS / f"{name}.py") for name in topics[number])
    return "".join(parts)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not PAGE.exists() or PAGE.read_text() != text:
            print("docs/cheatsheet.md is out of date: run python tools/make_cheatsheet.py")
            return 1
        return 0
    PAGE.write_text(text)
    print(f"wrote docs/cheatsheet.md ({len(ORDER)} snippets)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
