"""Grade submitted lab notebooks: ``python tools/grade.py SUBMISSION.ipynb... --csv PATH``.

The lab is the one named in the notebook's metadata (``"loaderlab": {"lab": "01"}``, written by
``tools/make_labs.py``), whatever the file is called. Each submission runs in its own kernel, in a
temporary copy of the course layout (``labs/`` beside ``notebooks/``, whose lesson modules the labs
import), with one timeout for the whole submission, counted from the kernel's start. The student's
cells run first, except those that only call a checker; then the lab's official check cells, taken
from ``labs/`` with their checkers imported afresh, so deleting or editing a check cell cannot pass;
then the lab's cells after its checks (a cleanup). Afterwards the kernel's
process group is killed and no process it started is left. The CSV has the columns
``submission,lab,passed,reason``; a folder argument means every ``*.ipynb`` in it. Exit status: 0
when every submission was graded, 2 on a usage error, 130 when interrupted (the CSV holds those graded).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loaderlab.checks.report import FAIL, PASS, PENDING

ROOT = Path(__file__).resolve().parent.parent  # the course: labs/ and notebooks/ beside tools/
CHECK_CALL = re.compile(r"\bcheck_\w+\s*\(")
ONLY_CHECKS = re.compile(r"^\s*((\w+\s*=\s*)?check_\w+\(.*\)\s*|#.*)?$")
IMPORTS = re.compile(r"^(from loaderlab[\w.]* import (\([^)]*\)|[^(\n]+)|import loaderlab[\w.]*( as \w+)?)", re.M)
SYNTAX = ("SyntaxError", "IndentationError", "TabError")


class UsageError(Exception):
    """A bad command line: the message is the one sentence printed."""


@dataclass
class Result:
    submission: str
    lab: str
    passed: bool
    reason: str


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one sentence instead of argparse's usage + error
        raise UsageError(f"{message} (usage: python tools/grade.py SUBMISSION.ipynb... --csv PATH [--timeout S])")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Return the parsed options; raise UsageError on a missing file, non-notebook or bad --timeout."""
    parser = _Parser(prog="python tools/grade.py", description="Grade lab notebooks, each in its own "
                     "kernel with its lab's official checks (the lab from the notebook's metadata).")
    parser.add_argument("submissions", nargs="+", help="submitted .ipynb files, or folders of them")
    parser.add_argument("--csv", required=True, help="where to write submission,lab,passed,reason")
    parser.add_argument("--timeout", default="120", help="seconds each submission may run (default 120)")
    args = parser.parse_args(list(argv))
    try:
        args.timeout = float(args.timeout)
    except ValueError:
        raise UsageError(f"--timeout must be a number of seconds, got {args.timeout!r}") from None
    if not 0 < args.timeout <= 24 * 3600:
        raise UsageError(f"--timeout must be > 0 and at most a day, got {args.timeout:g}")
    paths: list[Path] = []
    for name in args.submissions:
        path = Path(name)
        if path.is_dir():
            found = sorted(path.glob("*.ipynb"))
            if not found:
                raise UsageError(f"{name}: the folder holds no .ipynb file")
            paths += found
        elif not path.is_file():
            raise UsageError(f"{name}: no such file")
        else:
            paths.append(path)
    for path in paths:
        _read(path)
    folder = Path(args.csv).resolve().parent
    if Path(args.csv).is_dir() or not folder.is_dir() or not os.access(folder, os.W_OK):
        raise UsageError(f"--csv {args.csv}: not a file in an existing, writable folder")
    args.paths = paths
    return args


def _read(path: Path):
    import nbformat

    try:
        return nbformat.read(path, as_version=4)
    except Exception as exc:  # JSON or schema error: a usage error, named in one sentence
        summary = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else type(exc).__name__
        raise UsageError(f"{path}: not a Jupyter notebook ({summary})") from None


def official_lab(lab: str) -> Path | None:
    """Return labs/<lab>_*.ipynb of the course, or None when there is no such lab."""
    if not re.fullmatch(r"\d\d", lab):
        return None
    found = sorted((ROOT / "labs").glob(f"{lab}_*.ipynb"))
    return found[0] if found else None


def _layout(work: Path) -> Path:
    """Copy the course layout the labs expect into ``work``; return the labs folder."""
    (work / "labs").mkdir()
    (work / "notebooks").mkdir()
    for module in (ROOT / "notebooks").glob("*.py"):
        shutil.copy2(module, work / "notebooks" / module.name)
    return work / "labs"


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def _error(cell):
    return next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)


def _verdict(cell) -> tuple[str, str]:
    """Return (mark, sentence) of the verdict a check cell printed last, or ("", "")."""
    for line in reversed(_text(cell).splitlines()):  # the checker prints after the student's code
        for mark in (FAIL, PENDING, PASS):
            if line.startswith(mark):
                return mark, line[len(mark):].strip()
    return "", ""


def _kernel_name() -> str:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("loaderlab")
        return "loaderlab"
    except NoSuchKernel:  # not registered (no `make setup`): this Python's own kernel
        return "python3"


def _kill(pgid: int, tracked: list) -> None:
    """SIGKILL the kernel's process group (the kernel still alive, so the group is surely its) and
    every process it was seen to start, in case one left the group; wait until they are gone."""
    import psutil

    with contextlib.suppress(OSError, AttributeError):  # no process groups on Windows: `tracked` only
        os.killpg(pgid, signal.SIGKILL)
    for proc in tracked:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(tracked, timeout=5)


def _cells(path: Path, lab_file: Path) -> list:
    """Return the cells to run: the student's (checker calls and the lab's closing cells left out),
    the lab's checkers imported afresh, its check cells, then its closing cells (e.g. a cleanup of
    the files the checks read)."""
    import nbformat

    new = nbformat.v4.new_code_cell
    official = [c for c in nbformat.read(lab_file, as_version=4).cells if c.cell_type == "code"]
    last = max((i for i, c in enumerate(official) if CHECK_CALL.search(c.source)), default=len(official))
    closing = [c.source for c in official[last + 1:]]
    cells = []
    for number, cell in enumerate(_read(path).cells, 1):  # cell numbers as the student counts them
        lines = cell.source.splitlines()
        if cell.cell_type == "code" and cell.source.strip() not in {c.strip() for c in closing} and not (
                CHECK_CALL.search(cell.source) and all(map(ONLY_CHECKS.match, lines))):
            cells.append(new(cell.source, metadata={"student_cell": number}))
    cells.append(new("\n".join(m.group(0) for c in official for m in IMPORTS.finditer(c.source))))
    cells += [new(c.source, metadata={"check": True}) for c in official if CHECK_CALL.search(c.source)]
    return cells + [new(source) for source in closing]


def run_submission(path: Path, lab_file: Path, timeout: float) -> str:
    """Run ``path`` then the official checks of ``lab_file`` in a fresh kernel; return '' or why it failed."""
    import nbformat
    import psutil
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    cells = _cells(path, lab_file)
    with tempfile.TemporaryDirectory(prefix="loaderlab-grade-") as tmp:
        client = NotebookClient(nbformat.v4.new_notebook(cells=cells), kernel_name=_kernel_name(),
                                allow_errors=True, shutdown_kernel="immediate", record_timing=False,
                                resources={"metadata": {"path": str(_layout(Path(tmp)))}})
        cell, env = cells[0], {**os.environ, "MPLBACKEND": "agg", "PYTHONUNBUFFERED": "1"}
        try:
            with client.setup_kernel(env=env, stderr=subprocess.DEVNULL):  # not the kernel's log lines
                kernel, tracked = psutil.Process(client.km.provisioner.process.pid), []
                deadline = time.monotonic() + timeout  # from a started kernel: a busy grader's slow start is not the student's
                try:
                    for index, cell in enumerate(cells):
                        client.timeout = max(1, int(deadline - time.monotonic() + 0.999))
                        try:
                            client.execute_cell(cell, index)
                        finally:
                            tracked += [p for p in kernel.children(recursive=True) if p not in tracked]
                        if time.monotonic() > deadline:
                            raise CellTimeoutError("deadline")
                finally:
                    _kill(kernel.pid, tracked)  # the kernel leads its own process group
        except CellTimeoutError:
            number = cell.metadata.get("student_cell")
            where = f"cell {number}" if number else f"the lab's check {cell.source.strip()[:60]}"
            return f"timeout: still running after {timeout:g} s, in {where}"
        except DeadKernelError:
            return "the kernel died (out of memory, or a crash in native code) while running the notebook"
        except RuntimeError as exc:  # the kernel did not start
            return f"could not start a kernel: {' '.join(str(exc).split())[:120]}"
    return _reason(cells)


def _reason(cells: list) -> str:
    """Return '' when every official check passed, else the first reason it did not."""
    errors = [(c.metadata.student_cell, e) for c in cells if c.metadata.get("student_cell") and (e := _error(c))]
    checks = [(c, *_verdict(c), _error(c)) for c in cells if c.metadata.get("check")]
    if checks and all(mark == PASS and err is None for _, mark, _, err in checks):
        return ""
    if errors and errors[0][1]["ename"] in SYNTAX:
        (number, err) = errors[0]
        message = re.sub(r"\(\d+\.py, (line \d+)\)", r"(\1)", err["evalue"])  # IPython's name for a cell
        return f"syntax error in cell {number}: {err['ename']}: {message}"
    if not checks:
        return "the lab has no check cell to run"
    for cell, mark, sentence, err in checks:
        name = CHECK_CALL.search(cell.source).group(0).rstrip("( ")
        if mark == PENDING or (err and err["ename"] == "NotImplementedError"):
            return f"unfinished stub: {name} says {sentence or 'not attempted yet'}"
        if mark == FAIL:
            return f"{name}: {sentence}"
        if err is not None:
            if errors:  # the student's first error explains the check's better than the check's own
                number, first = errors[0]
                if first["ename"] == "NotImplementedError":
                    return f"unfinished stub: cell {number} raises NotImplementedError"
                return f"cell {number} raised {first['ename']}: {' '.join(first['evalue'].split())[:200]}"
            return f"{name} could not run: {err['ename']}: {' '.join(err['evalue'].split())[:200]}"
        if mark != PASS:
            return f"{name} printed no verdict (was the checker replaced?)"
    return ""


def grade(path: Path, timeout: float) -> Result:
    """Return the grade of one submission."""
    meta = _read(path).metadata.get("loaderlab")
    lab = str(meta.get("lab", "")) if isinstance(meta, dict) else ""
    if not lab:
        return Result(str(path), "", False, "unknown lab: no loaderlab metadata (was the notebook made from labs/?)")
    lab_file = official_lab(lab)
    if lab_file is None:
        return Result(str(path), lab, False, f"unknown lab {lab!r}: no labs/{lab}_*.ipynb in this course")
    reason = run_submission(path, lab_file, timeout)
    return Result(str(path), lab, not reason, " ".join(reason.split()))


def summary(results: list[Result]) -> str:
    """Return the per-lab table: lab, submissions, passed, failed (and a row for all)."""
    groups = {lab or "?": [r for r in results if r.lab == lab] for lab in sorted({r.lab for r in results})}
    rows = [("lab", "submissions", "passed", "failed")]
    for lab, mine in [*groups.items(), ("all", results)]:
        passed = sum(r.passed for r in mine)
        rows.append((lab, str(len(mine)), str(passed), str(len(mine) - passed)))
    return "\n".join(f"{a:<5} {b:>11} {c:>7} {d:>7}" for a, b, c, d in rows)


def main(argv: Sequence[str]) -> int:
    """Grade the submissions named in ``argv``; write the CSV; return the exit status."""
    try:
        args = parse_args(argv)
    except UsageError as exc:
        print(f"tools/grade.py: {exc}", file=sys.stderr)
        return 2
    results, status = [], 0
    for path in args.paths:
        start = time.monotonic()
        try:
            result = grade(path, args.timeout)
        except KeyboardInterrupt:  # Ctrl-C: its kernel is gone already; keep the grades so far
            print(f"interrupted at {path}: {len(results)} of {len(args.paths)} graded", file=sys.stderr)
            status = 130
            break
        except Exception as exc:  # the grader's own failure on this submission: a row, not a traceback
            result = Result(str(path), "", False, f"could not be graded: {type(exc).__name__}: {exc}"[:300])
        results.append(result)
        verdict = f"{PASS} passed" if result.passed else f"{FAIL} {result.reason}"
        print(f"{path} (lab {result.lab or '?'}, {time.monotonic() - start:.1f} s): {verdict}", flush=True)
    with open(args.csv, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["submission", "lab", "passed", "reason"])
        writer.writerows([r.submission, r.lab, int(r.passed), r.reason] for r in results)
    print(summary(results))
    print(f"grades written to {args.csv}")
    return status


if __name__ == "__main__":
    sys.exit(main())
