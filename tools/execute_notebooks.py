"""Re-execute notebooks in place, the way the tests will run them (`make execute`).

Each notebook runs in its own kernel from its own folder with LOADERLAB_TEST_MODE=1 (stable
progress output) and without per-cell timing metadata, so a re-run changes a notebook's file
only where its outputs changed. Usage:
python -m tools.execute_notebooks [--no-write] [--record] [NOTEBOOK ...]
(--no-write only checks that they run, e.g. with LOADERLAB_START_METHOD=spawn; --record, which
`make execute` passes, stores each run time in docs/runtimes.json and updates the notebook's
"Runs in" header and README's course map from it: record on an otherwise idle machine.)
``client`` and ``run`` are the course's one way to run a notebook: this script, the tests
(tests/test_labs.py, tests/test_course_guarantees.py) and tools/machines.py use them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

try:  # imported as tools.execute_notebooks (python -m tools.execute_notebooks, the tests, grade.py)
    from tools import runtimes
except ImportError:  # run as a script, `python tools/execute_notebooks.py`: its folder is on sys.path
    import runtimes  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("notebooks", "solutions")
KERNEL = "loaderlab"


def notebooks(args: list[str]) -> list[Path]:
    if args:
        return [Path(a).resolve() for a in args]
    return [p for folder in FOLDERS for p in sorted((ROOT / folder).glob("*.ipynb"))]


def kernel_name() -> str:
    """The course's kernel ("loaderlab", registered by `make setup`), else this Python's own."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec(KERNEL)
        return KERNEL
    except NoSuchKernel:
        return "python3"


def client(nb: nbformat.NotebookNode, folder: Path, *, timeout: float = 300,
           allow_errors: bool = False, client_class: type[NotebookClient] = NotebookClient,
           **options: Any) -> NotebookClient:
    """The one way the course runs a notebook: a client for ``nb`` in a fresh kernel whose working
    folder is ``folder``, each cell at most ``timeout`` s, no timing or widget state in outputs.
    ``client(...).execute()`` runs it all; a caller that needs cell-by-cell control (the grader)
    uses ``setup_kernel()`` and ``execute_cell()`` on it, and may pass a ``client_class`` (a
    NotebookClient subclass) and more NotebookClient ``options``."""
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": "Python (loaderlab)", "language": "python"}
    return client_class(
        nb,
        timeout=int(timeout),
        kernel_name=kernel_name(),
        resources={"metadata": {"path": str(folder)}},
        record_timing=False,
        allow_errors=allow_errors,
        allow_error_names=[],
        # no widget state in the file (notebook 18's controls): it held a copy of every picture
        # and made the static site fetch the widget renderer online; the figures are outputs
        store_widget_state=False,
        **options,
    )


def run(path: Path, timeout: float = 300, allow_errors: bool = False) -> tuple[nbformat.NotebookNode, float]:
    """Execute the notebook at ``path`` from its own folder; return it with its outputs, and the
    seconds it took (kernel start included). Raises nbclient's CellExecutionError on a cell's
    error unless ``allow_errors``. The file is not written."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    runner = client(nb, path.parent, timeout=timeout, allow_errors=allow_errors)
    started: list[int] = []
    runner.on_cell_start = lambda cell, cell_index: started.append(cell_index)
    try:
        runner.execute()
    except Exception as exc:
        exc.cell_number = started[-1] + 1 if started else None  # counted from 1, markdown included
        exc.printed = printed(nb.cells[started[-1]]) if started else []
        raise
    seconds = time.perf_counter() - start
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)
    return nb, seconds


def printed(cell: nbformat.NotebookNode, lines: int = 12) -> list[str]:
    """The last ``lines`` lines a cell printed (its stdout and stderr), to say why it failed: a
    check cell prints its conditions before it asserts them."""
    text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
    return [ANSI.sub("", line) for line in text.splitlines() if line.strip()][-lines:]


def execute(path: Path, timeout: int = 300, write: bool = True) -> float:
    """Execute ``path`` (see ``run``), store its outputs in the file unless ``write`` is False;
    return the seconds it took."""
    nb, seconds = run(path, timeout=timeout)
    if write:
        nbformat.write(nb, path)
    return seconds


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def failure(exc: BaseException) -> str:
    """One line: where a notebook stopped and why ('cell 14: AssertionError: ...')."""
    name, value = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    last = (str(exc).strip().splitlines() or [""])[-1]
    what = (f"{name}: {value}" if value else name) if name else f"{type(exc).__name__}: {last}"
    where = f"cell {exc.cell_number}: " if getattr(exc, "cell_number", None) else ""
    return where + " ".join(ANSI.sub("", what).split())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.execute_notebooks", description=__doc__.split("\n")[0] if __doc__ else None
    )
    parser.add_argument("notebook", nargs="*",
                        help="notebooks or folders (default: notebooks/ and solutions/)")
    parser.add_argument("--no-write", action="store_true", help="only check that they run")
    parser.add_argument("--record", action="store_true",
                        help="store each run time (docs/runtimes.json)")
    args = parser.parse_args(argv)
    os.environ["LOADERLAB_TEST_MODE"] = "1"
    write = not args.no_write
    save_time = args.record and write and not os.environ.get("LOADERLAB_START_METHOD")
    failed = 0
    for path in notebooks(args.notebook):
        rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        try:
            seconds = execute(path, write=write)
        except Exception as exc:  # report and carry on with the others
            failed += 1
            print(f"FAILED {rel}: {failure(exc)}")
            print(*(f"    | {line}" for line in getattr(exc, "printed", [])), sep="\n")
            continue
        print(f"executed {rel} in {seconds:.1f} s")
        if save_time:
            runtimes.record(path, seconds)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
