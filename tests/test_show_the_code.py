"""The "Show the code" convention (README, Contributing), checked on the stored notebooks.

- A ``%%writefile lessonNN.py`` cell and the committed module it writes are the same text,
  and a notebook imports a lesson module only after the cell that writes it.
- Notebooks import no lesson piece from ``loaderlab`` (a Dataset, Sampler,
  collate_fn, worker_init_fn or a function that builds a DataLoader) and at most 10 lines of
  ``loaderlab`` imports.
- Every snippet shown under "In your own code" is an excerpt of a file in ``docs/snippets/``,
  and those files run with ``loaderlab`` uninstalled.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from course_code import ROOT
from torch.utils.data import Dataset, IterableDataset, Sampler

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
SNIPPETS = sorted((ROOT / "docs" / "snippets").glob("*.py"))
# Every notebook in notebooks/ follows the convention (the allowlist of converted notebooks
# that once stood here listed them all, so it is gone: a new notebook is checked from its start).
LESSONS = [p for p in NOTEBOOKS if p.parent.name == "notebooks"]
WRITEFILE = re.compile(r"\A%%writefile(?: -a)? (\S+)\n")


def _ids(paths):
    return [f"{p.parent.name}/{p.name}" for p in paths]


def code_cells(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def python_of(source: str) -> str:
    """The cell's Python: IPython magics and shell lines blanked out."""
    if source.startswith("%%"):
        return ""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _written_earlier(path: Path, module: str) -> bool:
    """Whether a notebook before this one (same folder, lower number) writes lesson module `module`."""
    for other in sorted(path.parent.glob("*.ipynb")):
        if other.name >= path.name:
            return False
        if any(
            (m := WRITEFILE.match(source)) and m.group(1) == f"{module}.py" for source in code_cells(other)
        ):
            return True
    return False


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_lesson_modules_match_their_cells_and_are_written_before_use(path):
    written: set[str] = set()
    for source in code_cells(path):
        match = WRITEFILE.match(source)
        if match:
            name = match.group(1)
            module = path.parent / name
            assert module.exists(), f"{path.name} writes {name}: commit it next to the notebook ({module})"
            body = source[match.end() :]
            assert module.read_text() == body + "\n" or module.read_text() == body, (
                f"{module.relative_to(ROOT)} differs from the %%writefile cell in {path.name}: "
                "re-run the cell (make execute NB=...) or copy the cell's text into the file"
            )
            written.add(Path(name).stem)
            continue
        for node in ast.walk(ast.parse(python_of(source))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lesson"):
                # a solution may import its notebook's lesson module (a visible sys.path line)
                from_notebook = (
                    path.parent.name == "solutions" and (ROOT / "notebooks" / f"{node.module}.py").exists()
                )
                # a later notebook imports an earlier notebook's lesson module instead of writing it again
                assert node.module in written or from_notebook or _written_earlier(path, node.module), (
                    f"{path.name} imports {node.module} before a cell writes it"
                )


LESSON_MODULE = re.compile(r"lesson(\d\d)_[a-z]+(?:_[a-z]+)*\.py")
WRITTEN_BY = re.compile(r'"""(?:Written by notebook|Lesson) (\d\d)\b.*section')


@pytest.mark.parametrize("module", sorted((ROOT / "notebooks").glob("lesson*.py")), ids=lambda p: p.name)
def test_lesson_modules_are_named_for_what_they_hold_and_say_who_writes_them(module):
    name = LESSON_MODULE.fullmatch(module.name)
    assert name and len(module.stem.split("_", 1)[1]) > 1, (
        f"{module.name}: name lesson modules lessonNN_what_it_holds.py (e.g. lesson06_packed_rows.py)"
    )
    first = WRITTEN_BY.match(module.read_text().splitlines()[0])
    assert first and first.group(1) == name.group(1), (
        f"{module.name}: its first line should say which notebook and section write it "
        f'("""Written by notebook {name.group(1)}, section N: what it holds.""")'
    )


def lesson_pieces_from_loaderlab(source: str) -> list[str]:
    """Names a cell takes from loaderlab that are lesson code: Datasets, samplers, collate and
    worker_init functions, functions that return a DataLoader."""
    found = []
    for node in ast.walk(ast.parse(python_of(source))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "loaderlab":
            module = importlib.import_module(node.module)
            for alias in node.names:
                obj = getattr(module, alias.name, None)
                if obj is None:
                    continue
                is_piece = (
                    (inspect.isclass(obj) and issubclass(obj, (Dataset, IterableDataset, Sampler)))
                    or "collate" in alias.name
                    or "worker_init" in alias.name
                    or (
                        inspect.isfunction(obj)
                        and "DataLoader" in str(inspect.signature(obj).return_annotation)
                    )
                )
                if is_piece:
                    found.append(f"{node.module}.{alias.name}")
    return found


@pytest.mark.parametrize("path", LESSONS, ids=_ids(LESSONS))
def test_notebooks_take_no_lesson_code_from_the_package(path):
    pieces, import_lines = [], 0
    for source in code_cells(path):
        pieces += lesson_pieces_from_loaderlab(source)
        for node in ast.walk(ast.parse(python_of(source))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = (
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                )
                if any(n.split(".")[0] == "loaderlab" for n in names):
                    import_lines += node.end_lineno - node.lineno + 1
    assert not pieces, f"{path.name} imports lesson code from loaderlab: {pieces}; write it in a visible cell"
    assert import_lines <= 10, f"{path.name} has {import_lines} lines of loaderlab imports (at most 10)"


def shown_snippets(path: Path) -> list[str]:
    """The ```python blocks of the notebook's "In your own code" section."""
    blocks, inside = [], False
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "markdown":
            continue
        for part in re.split(r"(?m)^(?=## )", cell.source):
            if part.startswith("## "):
                inside = part.startswith("## In your own code")
            if inside:
                blocks += re.findall(r"```python\n(.*?)```", part, re.S)
    return blocks


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("path", LESSONS, ids=_ids(LESSONS))
def test_every_snippet_shown_is_an_excerpt_of_a_tested_snippet_file(path):
    blocks = shown_snippets(path)
    assert blocks, f"{path.name} shows no snippet under '## In your own code'"
    files = {p.name: _lines(p.read_text()) for p in SNIPPETS}
    for block in blocks:
        want = _lines(block)
        found = any(want == lines[i : i + len(want)] for lines in files.values() for i in range(len(lines)))
        assert found, (
            f"{path.name} shows a snippet that is not in docs/snippets/ (copy the lines "
            f"exactly from one file):\n{block}"
        )


@pytest.mark.course
def test_snippet_files_run_without_loaderlab():
    for path in SNIPPETS:
        tree = ast.parse(path.read_text())
        imported = {
            a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
        }
        imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "loaderlab" not in imported, f"docs/snippets/{path.name} imports loaderlab"
    code = (
        "import runpy, sys; sys.modules['loaderlab'] = None\n"
        "for p in sys.argv[1:]: runpy.run_path(p, run_name='snippet')"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *map(str, SNIPPETS)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
