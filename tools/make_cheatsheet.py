"""Generate docs/cheatsheet.md (one page to print) and docs/recipes.md (every snippet, whole) from
the tested snippet files in docs/snippets/.

docs/cheatsheet.md: one recipe per pitfall (PITFALLS): the symptom, the fix in a sentence, and
the few lines of tested code that do it, taken from a snippet by name (a function, a class or
``Class.method``), so they are the code the tests exercise. Two printed pages at most.

docs/recipes.md: each snippet file's docstring gives the heading (first line) and the prose,
and names the notebook that measures why ("Notebook 07"): one section per notebook topic, in
course order, with that topic's snippets in ORDER. The rest of the file is the code shown.

``--check`` exits 1 when either page is out of date (a test runs it), so neither can drift from
the code that tests/test_cheatsheet.py and tests/test_snippets_*.py exercise.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

import nbformat

try:  # imported as tools.make_cheatsheet (python -m, the tests)
    from tools.course_files import numbered
except ImportError:  # run as a script, `python tools/make_cheatsheet.py`: its folder is on sys.path
    from course_files import numbered  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
SNIPPETS = ROOT / "docs" / "snippets"
PAGE = ROOT / "docs" / "recipes.md"
SHEET = ROOT / "docs" / "cheatsheet.md"
ORDER = [
    "first_loader",
    "loop_to_loader",
    "drop_last_and_debug_order",
    "loader_configs",
    "choose_num_workers",
    "image_dataset",
    "pad_collate",
    "bucketing",
    "packed_rows",
    "worker_seeding",
    "reproducible_loader",
    "timeouts_and_debugging",
    "per_process_resources",
    "hdf5_per_process",
    "epoch_sampler",
    "skip_corrupt_samples",
    "train_eval_split",
    "balanced_weights",
    "undersampling",
    "ddp_epochs",
    "sharded_iterable",
    "shuffle_buffer",
    "main_guard",
    "start_method_preload",
    "resume_mid_epoch",
    "data_wait",
    "profile_loader",
    "out_of_order",
    "sharing_strategy",
    "thread_loader",
    "loader_limits",
    "memory_budget",
    "threads_in_workers",
    "uneven_shards",
]
HEADER = """# Recipes: every copy-paste snippet

The one-page version, one recipe per pitfall, is the [cheat sheet](cheatsheet.md). Every
snippet below is a real file in `docs/snippets/` that the tests (`tests/test_cheatsheet.py`,
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
    path = numbered(number)
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


# (symptom, the fix in one sentence, snippet file, objects shown, notebook): one recipe per pitfall
PITFALLS = [
    (
        "The last batch holds 1 sample and BatchNorm raises",
        "`drop_last=True` for training, never for validation.",
        "drop_last_and_debug_order",
        ["train_and_val_loaders"],
        "02",
    ),
    (
        "The step waits for data (is loading the bottleneck?)",
        "time the wait inside `next(loader)`: over about 0.2 of the epoch, fix the input pipeline.",
        "data_wait",
        ["data_wait_fraction"],
        "14",
    ),
    (
        "How many workers?",
        "measure samples per second for a few counts, workers kept alive between epochs.",
        "choose_num_workers",
        ["sweep_num_workers"],
        "03",
    ),
    (
        "Sequences of different lengths do not stack",
        "pad in `collate_fn` to the batch's longest, with a padding mask from the lengths "
        "(True at padding, as `torch.nn` takes it).",
        "pad_collate",
        ["pad_collate"],
        "05",
    ),
    (
        "Worker memory grows with `num_workers` (copy-on-write)",
        "keep big tables in a few tensors (bytes + offsets), not one Python object per row: they stay "
        "shared under fork, spawn and forkserver (NumPy arrays are copied into spawn workers).",
        "packed_rows",
        ["pack_rows", "Captions"],
        "06",
    ),
    (
        "Augmentations repeat across workers or epochs",
        "keep a seed, build the generator in the worker from `get_worker_info().seed`; never ship one.",
        "worker_seeding",
        ["NoisySamples.generator", "NoisySamples.__getstate__"],
        "07",
    ),
    (
        "Two runs load different data",
        "a `generator=` seeded once (not every epoch; `seed + epoch` to rebuild one epoch), "
        "and the same `num_workers`.",
        "reproducible_loader",
        ["reproducible_loader"],
        "07",
    ),
    (
        "A worker hangs on a lock, or reads wrong records",
        "open files, clients and locks in the process that uses them, on first use.",
        "per_process_resources",
        ["RecordsFile._file"],
        "20",
    ),
    (
        "One unreadable image ends the epoch, or `found <class 'NoneType'>`",
        "drop the `None`s in `collate_fn` (None for an empty batch); "
        "better, scan once and train on a `Subset`.",
        "skip_corrupt_samples",
        ["skip_broken_collate"],
        "21",
    ),
    (
        "Validation numbers change between two passes",
        "`random_split` shares one dataset and its random transform: two datasets, one set of indices.",
        "train_eval_split",
        ["train_and_val_sets"],
        "22",
    ),
    (
        "A hang with no error",
        "`timeout=` turns it into an error after a bound.",
        "timeouts_and_debugging",
        ["guarded_loader"],
        "08",
    ),
    (
        "Every epoch has the same order under DDP",
        "`sampler.set_epoch(epoch)` before every epoch.",
        "ddp_epochs",
        ["train_epochs"],
        "10",
    ),
    (
        "An IterableDataset yields every item once per worker",
        "shard by `(rank, worker)` in `__iter__`.",
        "sharded_iterable",
        ["RankWorkerShardedStream.__iter__"],
        "11",
    ),
    (
        "`Can't get attribute … on <module '__main__'>`, or a bootstrapping `RuntimeError` (spawn)",
        "worker code in an importable module, training under the `__main__` guard.",
        "main_guard",
        ["main"],
        "12",
    ),
    (
        "`Too many open files` when keeping batches",
        "keep private copies, which hold no descriptor.",
        "sharing_strategy",
        ["keep"],
        "15",
    ),
    (
        "`DataLoader worker (pid X) is killed by signal: Killed` (out of memory)",
        "predict the peak: main + workers × (start + growth + prefetch_factor × batch); cut growth first.",
        "memory_budget",
        ["loader_budget_mb"],
        "23",
    ),
    (
        "Workers run NumPy/OpenCV code and the epoch got slower with more workers",
        "one BLAS and OpenCV thread per worker, set in `worker_init_fn`.",
        "threads_in_workers",
        ["one_thread_per_worker"],
        "24",
    ),
    (
        "A DDP job hangs at the end of an epoch",
        "the same batch count on every rank: `all_reduce(MIN)` of `len(loader)`.",
        "uneven_shards",
        ["common_batches"],
        "25",
    ),
    (
        "A rare class is hardly ever drawn",
        "inverse-frequency weights in a `WeightedRandomSampler`.",
        "balanced_weights",
        ["balanced_sampler"],
        "09",
    ),
]
SHEET_HEADER = """# Cheat sheet: one recipe per pitfall

One page for the desk (print it from the site, `make html`: two pages at most). Each recipe is
tested code from `docs/snippets/`, cut to the lines that matter; generated by
`python tools/make_cheatsheet.py`. Every snippet whole, with its explanation:
[recipes](recipes.md). The number links the notebook that measures why.
"""


def excerpt(path: Path, name: str) -> str:
    """Return the source of ``name`` (a function, a class, or ``Class.method``) in a snippet file,
    its docstring left out."""
    source = path.read_text()
    scope: list = ast.parse(source).body
    node: ast.FunctionDef | ast.ClassDef | None = None
    for part in name.split("."):
        node = next(
            (n for n in scope if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part), None
        )
        if node is None:
            raise SystemExit(f"{path.name}: no {name}")
        scope = node.body
    if node is None:
        raise SystemExit(f"{path.name}: no name given")
    lines = source.splitlines()[node.lineno - 1 : node.end_lineno]
    doc = node.body[0] if node.body else None
    if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str):
        # the docstring is the page's prose, not code
        del lines[doc.lineno - node.lineno : (doc.end_lineno or doc.lineno) - node.lineno + 1]
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return "\n".join(re.sub(r"\s+# noqa\b.*$", "", line[indent:]) for line in lines)  # no lint marks


def render_sheet() -> str:
    """Return docs/cheatsheet.md: one recipe per pitfall."""
    parts = [SHEET_HEADER, '\n<div class="cheatsheet" markdown>\n']
    for symptom, fix, name, objects, number in PITFALLS:
        notebook = numbered(number).name
        code = "\n\n".join(excerpt(SNIPPETS / f"{name}.py", obj) for obj in objects)
        parts.append(
            f"\n**{symptom}** → {fix} [{number}](../notebooks/{notebook}) · "
            f"[`{name}.py`](recipes.md)\n\n```python\n{code}\n```\n"
        )
    parts.append("\n</div>\n")
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.make_cheatsheet", description=__doc__.split("\n")[0] if __doc__ else None
    )
    parser.add_argument(
        "--check", action="store_true", help="only say whether the pages are current (exit 1)"
    )
    args = parser.parse_args(argv)
    pages = {PAGE: render(), SHEET: render_sheet()}
    if args.check:
        stale = [p.name for p, text in pages.items() if not p.exists() or p.read_text() != text]
        for name in stale:
            print(f"docs/{name} is out of date: run python tools/make_cheatsheet.py")
        return 1 if stale else 0
    for path, text in pages.items():
        path.write_text(text)
    print(f"wrote docs/recipes.md ({len(ORDER)} snippets) and docs/cheatsheet.md ({len(PITFALLS)} pitfalls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
