"""Re-execute notebooks in place, the way the tests will run them (`make execute`).

Each notebook runs in its own kernel from its own folder with LOADERLAB_TEST_MODE=1 (stable
progress output) and without per-cell timing metadata, so a re-run changes a notebook's file
only where its outputs changed. Usage:
python -m tools.execute_notebooks [--no-write] [NOTEBOOK ...]
(--no-write only checks that they run, e.g. with LOADERLAB_START_METHOD=spawn). This writes outputs
only (`make execute`); the course's record, with its run time, peak memory and what it was taken
on, comes from the recorder, tools/record.py (`make record`), which runs each notebook through
``run`` below on a quiet machine (`--record` here hands over to it).
``client`` and ``run`` are the course's one way to run a notebook: this script, the recorder, the
tests (tests/test_labs.py, tests/test_course_guarantees.py) and tools/machines.py use them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

try:  # python -m tools.execute_notebooks, and the tools and tests that import it
    from tools.course import KERNEL, kernel_specs
    from tools.course_files import FOLDERS, notebooks_in
except ImportError:  # run as a script, `python tools/execute_notebooks.py`: its folder is on sys.path
    from course import KERNEL, kernel_specs  # type: ignore[no-redef]
    from course_files import FOLDERS, notebooks_in  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent


def notebooks(args: list[str]) -> list[Path]:
    if args:
        return [Path(a).resolve() for a in args]
    return [p for folder in FOLDERS for p in notebooks_in(folder)]


def kernel_name() -> str:
    """The course's kernel ("loaderlab", registered by `make setup`), else this Python's own."""
    return KERNEL if KERNEL in kernel_specs() else "python3"


def client(
    nb: nbformat.NotebookNode,
    folder: Path,
    *,
    timeout: float = 300,
    allow_errors: bool = False,
    client_class: type[NotebookClient] = NotebookClient,
    **options: Any,
) -> NotebookClient:
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


def run(
    path: Path,
    timeout: float = 300,
    allow_errors: bool = False,
    on_kernel: Callable[[NotebookClient], None] | None = None,
) -> tuple[nbformat.NotebookNode, float]:
    """Execute the notebook at ``path`` from its own folder; return it with its outputs, and the
    seconds it took (kernel start included). Raises nbclient's CellExecutionError on a cell's
    error unless ``allow_errors``. The file is not written. ``on_kernel(client)`` is called once
    the kernel is ready, before the first cell (the recorder starts its memory monitor on the
    kernel's pid, ``client.km.provisioner.pid``)."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    runner = client(nb, path.parent, timeout=timeout, allow_errors=allow_errors)
    if on_kernel is not None:
        runner.on_notebook_start = lambda notebook: on_kernel(runner)
    started: list[int] = []
    runner.on_cell_start = lambda cell, cell_index: started.append(cell_index)
    try:
        runner.execute()
    except Exception as exc:
        exc.cell_number = started[-1] + 1 if started else None  # type: ignore[attr-defined]  # from 1
        exc.printed = printed(nb.cells[started[-1]]) if started else []  # type: ignore[attr-defined]
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
    return the seconds it took. New outputs are no record: the recorder's metadata goes
    (`make record` takes one)."""
    nb, seconds = run(path, timeout=timeout)
    if write:
        nb.metadata.get("loaderlab", {}).pop("record", None)
        nbformat.write(nb, path)
    return seconds


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def failure(exc: BaseException) -> str:
    """One line: where a notebook stopped and why ('cell 14: AssertionError: ...')."""
    name, value = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    last = (str(exc).strip().splitlines() or [""])[-1]
    what = (f"{name}: {value}" if value else name) if name else f"{type(exc).__name__}: {last}"
    number = getattr(exc, "cell_number", None)
    where = f"cell {number}: " if number else ""
    return where + " ".join(ANSI.sub("", what).split())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.execute_notebooks", description=__doc__.split("\n")[0] if __doc__ else None
    )
    parser.add_argument(
        "notebook", nargs="*", help="notebooks or folders (default: notebooks/ and solutions/)"
    )
    parser.add_argument("--no-write", action="store_true", help="only check that they run")
    parser.add_argument(
        "--record", action="store_true", help="hand over to the recorder (tools/record.py: make record)"
    )
    args, rest = parser.parse_known_args(argv)
    if args.record:  # the recorder: one implementation of the course's record
        try:
            from tools import record
        except ImportError:  # run as a script, `python tools/execute_notebooks.py`
            import record  # type: ignore[no-redef]

        return record.main([*args.notebook, *rest])
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    os.environ["LOADERLAB_TEST_MODE"] = "1"
    write = not args.no_write
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
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
