"""Grade submitted lab notebooks: ``python tools/grade.py SUBMISSIONS... --csv PATH``.

Any Python starts it (``py tools/grade.py ...`` on Windows): without the notebook tools it runs
itself again with the course's ``.venv`` Python.

The lab is the one named in the notebook's metadata (``"loaderlab": {"lab": "01"}``, written by
``tools/make_labs.py``), whatever the file is called; ``--lab NN`` overrides it. A folder means
every ``*.ipynb`` under it, in subfolders too (an LMS export puts each student in a folder).

Each submission runs in its own kernel (the course's ``loaderlab`` kernel), in a temporary copy of
the course layout (``labs/`` beside ``notebooks/``, and a copy of the ``loaderlab`` package that
the kernel imports first). Everything copied comes from the files as they were when the grader
started, so a submission that rewrites the course's files changes nothing for those graded after
it. One timeout covers the whole submission, counted from the kernel's start. The student's
cells run first, except those that only call a checker; then each of the lab's official checks,
taken from ``labs/`` (deleting or editing a check cell changes nothing). Before the student's
first cell, the kernel-side code (``tools/grade_kernel.py``) captures everything the checks use
to compute, encode, sign and return a verdict, and every function, class and module that the
loaded modules expose (torch and NumPy included); before each check it restores them, imports
the checker afresh from a copy of the package written after the student's cells ran, calls it,
and signs its return value with a key that only the captured code holds. The verdict is that
return value, not anything printed: a cell that replaces a checker, the checks package,
``print``, a hook, or a standard-library function the check code uses (``json.dumps``,
``importlib.import_module``, ``hmac.new``...) cannot turn a stub into a pass. Then the lab's
cells after its checks (a cleanup), and the kernel's process group is killed: no process it
started is left. (Code can still defeat this on purpose by reaching into the grader's own objects
— a closure's cells, the garbage collector's object list —, by replacing attributes of classes,
or from inside the answer the checker calls: the grader closes the shortcuts, reading the
answers closes the rest.)

What it writes (the CSV, a feedback file per submission, the summary) is tools/grade_report.py's:
a notebook that cannot be read, a kernel that dies and a timeout are rows with their reason. Each
submission's output is capped (``OUTPUT_CAP_BYTES``).
Exit status: 0 when every submission was graded, 2 on a usage error (one sentence), 130 when
interrupted (the CSV holds those graded).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

try:  # imported as tools.grade (python -m, the tests)
    from tools.course import KERNEL, kernel_specs
    from tools.course_files import notebooks_in, numbered
    from tools.grade_lab import Check, lab_checks, student_cells
    from tools.grade_report import Result, student_of, summary, write_csv, write_feedback
except ImportError:  # run as a script, `python tools/grade.py`: its folder is on sys.path
    from course import KERNEL, kernel_specs  # type: ignore[no-redef]
    from course_files import notebooks_in, numbered  # type: ignore[no-redef]
    from grade_lab import Check, lab_checks, student_cells  # type: ignore[no-redef]
    from grade_report import Result, student_of, summary, write_csv, write_feedback  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent  # the course: labs/ and notebooks/ beside tools/
PASS, FAIL, PENDING = "✅", "❌", "⏳"  # as loaderlab.checks.report prints them
IMPORTS = re.compile(
    r"^(from loaderlab[\w.]* import (\([^)]*\)|[^(\n]+)|import loaderlab[\w.]*( as \w+)?)", re.M
)
SYNTAX = ("SyntaxError", "IndentationError", "TabError")
OUTPUT_CAP_BYTES = 2_000_000  # what one submission's cells may print; more is dropped
USAGE = "usage: python tools/grade.py SUBMISSIONS... --csv PATH [--timeout S] [--lab NN] [--feedback DIR]"


class UsageError(Exception):
    """A bad command line: the message is the one sentence printed."""


class Unreadable(Exception):
    """A submission that is not a notebook: the message is its CSV reason."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one sentence instead of argparse's usage + error
        raise UsageError(f"{message} ({USAGE})")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Return the parsed options; raise UsageError on a missing file, a bad --timeout or --lab."""
    parser = _Parser(
        prog="python tools/grade.py",
        description="Grade lab notebooks, each in its own "
        "kernel with its lab's official checks (the lab from the notebook's metadata).",
    )
    parser.add_argument("submissions", nargs="+", help="submitted .ipynb files, or folders of them")
    parser.add_argument("--csv", required=True, help="where to write student,submission,lab,points,...")
    parser.add_argument("--timeout", default="120", help="seconds each submission may run (default 120)")
    parser.add_argument("--lab", help="grade every submission as this lab (e.g. 03), whatever its metadata")
    parser.add_argument(
        "--feedback", help="folder for one feedback file per submission (default: feedback/ beside the CSV)"
    )
    args = parser.parse_args(list(argv))
    try:
        args.timeout = float(args.timeout)
    except ValueError:
        raise UsageError(f"--timeout must be a number of seconds, got {args.timeout!r}") from None
    if not 0 < args.timeout <= 24 * 3600:
        raise UsageError(f"--timeout must be > 0 and at most a day, got {args.timeout:g}")
    if args.lab is not None and official_lab(args.lab) is None:
        raise UsageError(
            f"--lab {args.lab}: no such lab (two digits, one of "
            f"{', '.join(p.name[:2] for p in notebooks_in('labs'))})"
        )
    paths: list[Path] = []
    args.roots = {}  # submission -> the folder argument it was found under (names its student)
    for name in args.submissions:
        path = Path(name)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
            if not found:
                raise UsageError(f"{name}: the folder holds no .ipynb file")
            paths += found
            args.roots.update((p, path) for p in found)
        elif not path.is_file():
            raise UsageError(f"{name}: no such file")
        else:
            paths.append(path)
    folder = Path(args.csv).resolve().parent
    if Path(args.csv).is_dir() or not folder.is_dir() or not os.access(folder, os.W_OK):
        raise UsageError(f"--csv {args.csv}: not a file in an existing, writable folder")
    args.feedback = Path(args.feedback) if args.feedback else folder / "feedback"
    if args.feedback.exists() and not args.feedback.is_dir():
        raise UsageError(f"--feedback {args.feedback}: not a folder")
    args.paths = paths
    return args


def _read(path: Path):
    import nbformat

    try:
        return nbformat.read(path, as_version=4)
    except Exception as exc:  # JSON or schema error, unreadable file: the submission's row says which
        summary = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else type(exc).__name__
        raise Unreadable(f"not a Jupyter notebook ({summary})") from None


def official_lab(lab: str) -> Path | None:
    """Return labs/<lab>_*.ipynb of the course, or None when there is no such lab."""
    if not re.fullmatch(r"\d\d", lab):
        return None
    try:
        return numbered(lab, "labs")
    except LookupError:
        return None


class Course:
    """The course files a submission may depend on, read once when grading starts: the package
    (``loaderlab/**/*.py``), the lesson modules (``notebooks/*.py``) and the official labs."""

    def __init__(self, root: Path = ROOT) -> None:
        self.package = {
            p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / "loaderlab").rglob("*.py"))
        }
        self.lessons = {p.name: p.read_bytes() for p in sorted((root / "notebooks").glob("*.py"))}
        self.labs = {p.name: p.read_text(encoding="utf-8") for p in notebooks_in("labs", root)}

    def write_package(self, folder: Path, read_only: bool = True) -> Path:
        """Write the package under ``folder`` (read-only unless told); return ``folder``."""
        for name, data in self.package.items():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        if read_only:
            _set_writable(folder, False)
        return folder

    def layout(self, work: Path) -> Path:
        """Write the course layout the labs expect into ``work``; return the labs folder."""
        (work / "labs").mkdir(parents=True)
        (work / "notebooks").mkdir()
        for name, data in self.lessons.items():
            (work / "notebooks" / name).write_bytes(data)
        self.write_package(work / "package")
        return work / "labs"


def _set_writable(folder: Path, writable: bool) -> None:
    for path in sorted(folder.rglob("*"), reverse=not writable) + [folder]:
        mode = path.stat().st_mode
        if writable:
            path.chmod(mode | stat.S_IWUSR)
        else:
            path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _error(cell):
    return next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)


def _kernel_name() -> str:
    """Return the course kernel's name; raise UsageError when it is not registered."""
    if KERNEL not in kernel_specs():
        raise UsageError(
            f"the course's Jupyter kernel {KERNEL!r} is not registered: run `make setup` "
            f"in the course folder (it registers it), then grade again"
        )
    return KERNEL


# Run silently (no IPython hook, no history) before the student's first cell: load the kernel-side
# code (tools/grade_kernel.py, under a name of its own, outside sys.modules) and keep its ``run``
# function under a random name; it captures what the checks need before student code can change it.
PRELUDE = """
def _loaderlab_install():
    import importlib.util
    spec = importlib.util.spec_from_file_location({module!r}, {path!r})
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    globals()[{entry!r}] = module.capture({key!r})
_loaderlab_install()
del _loaderlab_install
"""
KERNEL_CODE = Path(__file__).resolve().parent / "grade_kernel.py"


def _capped_client_class():
    """A NotebookClient subclass whose outputs stop being kept after ``OUTPUT_CAP_BYTES``."""
    from nbclient import NotebookClient

    class Capped(NotebookClient):
        printed = 0
        capped = False

        def output(self, outs, msg, display_id, cell_index):
            self.printed += len(json.dumps(msg.get("content", {})))
            if self.printed > OUTPUT_CAP_BYTES:
                self.capped = True
                return None
            return super().output(outs, msg, display_id, cell_index)

    return Capped


class _KernelDied(Exception):
    pass


class _Overtime(Exception):
    pass


def _silent(client, code: str, expression: str | None, deadline: float) -> dict:
    """Run ``code`` silently in the kernel (no IPython hook, no history); return the reply's content
    (with ``expression`` evaluated as its user expression)."""
    from queue import Empty

    from nbclient.util import ensure_async, run_sync

    async def request() -> dict:
        kc = client.kc
        msg_id = kc.execute(
            code,
            silent=True,
            store_history=False,
            allow_stdin=False,
            user_expressions={"verdict": expression} if expression else {},
        )
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Overtime
            try:
                reply = await ensure_async(kc.get_shell_msg(timeout=min(1.0, remaining)))
            except Empty:
                if not await ensure_async(client.km.is_alive()):
                    raise _KernelDied from None
                continue
            finally:  # what the request printed is not needed, and must not pile up
                with contextlib.suppress(Empty):
                    while True:
                        await ensure_async(kc.get_iopub_msg(timeout=0))
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"]

    return run_sync(request)()


def _check_reply(content: dict) -> None:
    """Raise when the grader's own silent request failed in the kernel (before any student cell)."""
    if content.get("status") != "ok":
        raise RuntimeError(
            f"the grader's set-up failed in the kernel: {content.get('ename')}: {content.get('evalue')}"
        )


def _verdict(content: dict, key: str, check: Check) -> None:
    """Fill ``check`` from the reply to its request; a reply not signed with ``key`` is a failure."""
    data = content.get("user_expressions", {}).get("verdict", {})
    if content.get("status") != "ok" or data.get("status") != "ok":
        failed = content if content.get("status") != "ok" else data
        check.error = f"{failed.get('ename', 'Error')}: {failed.get('evalue', '')}"
        return
    try:
        text, signature = ast.literal_eval(data["data"]["text/plain"]).rsplit("|", 1)
    except (ValueError, SyntaxError, KeyError, TypeError):
        check.error = "the check sent back no verdict"
        return
    if not hmac.compare_digest(signature, hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()):
        check.error = "the check's verdict was not the checker's"
        return
    verdict = json.loads(text)
    check.passed, check.out, check.error = bool(verdict["passed"]), verdict["out"], verdict["error"]


def run_submission(nb, lab_name: str, course: Course, timeout: float) -> tuple[str, list[Check]]:
    """Run the notebook ``nb`` then the official checks of ``lab_name`` in a fresh kernel; return
    '' or why it failed, and the checks with their verdicts."""
    import nbformat
    import psutil

    from loaderlab.processes import kill_tree  # the course's one way to kill a process tree

    try:  # the course's one way to run a notebook (imported as tools.grade, or run as a script)
        from tools.execute_notebooks import client as notebook_client
    except ImportError:
        from execute_notebooks import client as notebook_client  # type: ignore[no-redef]
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    official, checks, closing = lab_checks(course.labs[lab_name])
    cells = student_cells(nb, closing)
    imports = [m.group(0) for c in official for m in IMPORTS.finditer(c.source)]
    finish = [nbformat.v4.new_code_cell("\n".join(line for line in imports if ".checks" not in line))]
    finish += [nbformat.v4.new_code_cell(source) for source in closing]
    entry, key = f"_{secrets.token_hex(16)}", secrets.token_hex(32)
    tmp = Path(tempfile.mkdtemp(prefix="loaderlab-grade-"))
    client, where = None, "before the first cell"
    try:
        work = course.layout(tmp / "course")
        client = notebook_client(
            nbformat.v4.new_notebook(cells=cells + finish),
            work,
            timeout=timeout,
            allow_errors=True,
            client_class=_capped_client_class(),
            shutdown_kernel="immediate",
        )  # the course's kernel: main() checked it
        path = os.pathsep.join(filter(None, [str(tmp / "course" / "package"), os.environ.get("PYTHONPATH")]))
        env = {
            **os.environ,
            "MPLBACKEND": "agg",
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": path,
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        with client.setup_kernel(env=env, stderr=subprocess.DEVNULL):  # not the kernel's log lines
            kernel = psutil.Process(client.km.provisioner.process.pid)
            tracked: list[Any] = []
            deadline = time.monotonic() + timeout  # from a started kernel: a slow start is not the student's
            try:
                kernel_code = tmp / f"{secrets.token_hex(8)}.py"
                kernel_code.write_bytes(KERNEL_CODE.read_bytes())
                prelude = PRELUDE.format(
                    module=f"_{secrets.token_hex(8)}", path=str(kernel_code), entry=entry, key=key
                )
                _check_reply(_silent(client, prelude, None, deadline))
                kernel_code.unlink()
                for index, cell in enumerate(cells):
                    where = f"in cell {cell.metadata['student_cell']}"
                    _run_cell(client, cell, index, deadline, kernel, tracked)
                for check in checks:
                    where = f"in the lab's check {check.name}"
                    package = str(course.write_package(tmp / f"checks-{secrets.token_hex(8)}"))
                    call = ", ".join(map(repr, ["check", package, check.module, check.name, check.args]))
                    _verdict(_silent(client, f"{entry}('restore')", f"{entry}({call})", deadline), key, check)
                    _track(kernel, tracked)
                for index, cell in enumerate(finish, len(cells)):
                    where = "in the lab's closing cells"
                    _run_cell(client, cell, index, deadline, kernel, tracked)
            finally:
                # the kernel leads its own process group; `tracked`: what it started, in case one left it
                kill_tree(kernel.pid, also=tracked)
    except (CellTimeoutError, _Overtime):
        return f"timeout: still running after {timeout:g} s, {where}", checks
    except (DeadKernelError, _KernelDied):
        return (
            f"the kernel died {where}: the code ended its own process (os._exit, a signal), ran out "
            f"of memory or crashed in native code; nothing after it ran"
        ), checks
    except RuntimeError as exc:  # the kernel did not start
        return f"could not start a kernel: {' '.join(str(exc).split())[:120]}", checks
    finally:
        with contextlib.suppress(OSError):
            _set_writable(tmp, True)
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    reason = _reason(cells, checks)
    if reason and client is not None and client.capped:
        reason += f" (output beyond {OUTPUT_CAP_BYTES // 1_000_000} MB was not kept)"
    return reason, checks


def _track(kernel, tracked: list) -> None:
    import psutil

    with contextlib.suppress(psutil.Error):  # a kernel that died has no children to list
        tracked += [p for p in kernel.children(recursive=True) if p not in tracked]


def _run_cell(client, cell, index: int, deadline: float, kernel, tracked: list) -> None:
    from nbclient.exceptions import CellTimeoutError

    client.timeout = max(1, int(deadline - time.monotonic() + 0.999))
    try:
        client.execute_cell(cell, index)
    finally:
        _track(kernel, tracked)
    if time.monotonic() > deadline:
        raise CellTimeoutError("deadline")


def _line(check: Check) -> tuple[str, str]:
    """Return (mark, sentence) of the last verdict line the checker printed, or ("", "")."""
    for line in reversed(check.out.splitlines()):
        for mark in (FAIL, PENDING, PASS):
            if line.startswith(mark):
                return mark, line[len(mark) :].strip()
    return "", ""


def _reason(cells: list, checks: list[Check]) -> str:
    """Return '' when every official check passed, else the first reason it did not."""
    errors = [(c.metadata.student_cell, e) for c in cells if (e := _error(c))]
    if checks and all(c.passed for c in checks):
        return ""
    if errors and errors[0][1]["ename"] in SYNTAX:
        (number, err) = errors[0]
        message = re.sub(r"\(\d+\.py, (line \d+)\)", r"(\1)", err["evalue"])  # IPython's name for a cell
        return f"syntax error in cell {number}: {err['ename']}: {message}"
    if not checks:
        return "the lab has no check cell to run"
    for check in checks:
        if check.passed:
            continue
        mark, sentence = _line(check)
        if mark == PENDING and sentence.startswith("not checkable here"):
            return f"{check.name}: {sentence} (grade on a machine that can run it)"
        if mark == PENDING or (check.error or "").startswith("NotImplementedError"):
            return f"unfinished stub: {check.name} says {sentence or 'not attempted yet'}"
        if mark == FAIL:
            return f"{check.name}: {sentence}"
        if check.error is not None:
            if errors:  # the student's first error explains the check's better than the check's own
                number, first = errors[0]
                if first["ename"] == "NotImplementedError":
                    return f"unfinished stub: cell {number} raises NotImplementedError"
                return f"cell {number} raised {first['ename']}: {' '.join(first['evalue'].split())[:200]}"
            return f"{check.name} could not run: {check.error}"
        return f"{check.name} gave no verdict"
    return ""


def grade(path: Path, timeout: float, course: Course, lab: str | None = None) -> Result:
    """Return the grade of one submission (``lab``: grade it as that lab, whatever its metadata)."""
    try:
        nb = _read(path)
    except Unreadable as exc:
        return Result(str(path), lab or "", False, str(exc))
    if lab is None:
        meta = nb.metadata.get("loaderlab")
        lab = str(meta.get("lab", "")) if isinstance(meta, dict) else ""
    if not lab:
        return Result(
            str(path),
            "",
            False,
            "unknown lab: no loaderlab metadata (was the notebook made from labs/? grade it with --lab NN)",
        )
    lab_file = official_lab(lab)
    if lab_file is None or lab_file.name not in course.labs:
        return Result(str(path), lab, False, f"unknown lab {lab!r}: no labs/{lab}_*.ipynb in this course")
    reason, checks = run_submission(nb, lab_file.name, course, timeout)
    parts = [c.passed for c in checks] if len(checks) > 1 else []
    said = [(c.name, c.passed, _line(c)[1] or (c.error or "gave no verdict")) for c in checks]
    return Result(str(path), lab, not reason, " ".join(reason.split()), parts, checks=said)


def course_python(root: Path | None = None, platform: str = sys.platform) -> Path:
    """The course environment's Python (.venv/bin/python, or .venv\\Scripts\\python.exe on Windows)."""
    return (
        (ROOT if root is None else root)
        / ".venv"
        / ("Scripts/python.exe" if platform == "win32" else "bin/python")
    )


def in_course_env() -> bool:
    """True when this Python can grade: it has the notebook tools the grader imports."""
    import importlib.util

    needed = ("jupyter_client", "nbclient", "psutil")
    return all(importlib.util.find_spec(name) is not None for name in needed)


def relaunch(argv: Sequence[str]) -> int:
    """Run this script again with the course's Python (any Python may start it); return its status,
    or 2 with one sentence when the course is not set up."""
    python = course_python()
    if not python.exists():
        print(
            f"tools/grade.py: this Python ({sys.executable}) lacks the notebook tools and the course "
            f"has no .venv yet: run `make setup` (or `python tools/course.py setup`) in "
            f"{ROOT.name}/, then grade again",
            file=sys.stderr,
        )
        return 2
    try:
        return subprocess.call([str(python), str(Path(__file__).resolve()), *argv])
    except KeyboardInterrupt:
        return 130


def main(argv: Sequence[str] | None = None) -> int:
    """Grade the submissions named in ``argv`` (default: the command line); write the CSV; return
    the exit status. Started by a Python without the notebook tools (the system's), it runs itself
    again with the course's (``relaunch``)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not in_course_env():
        return relaunch(argv)
    try:
        args = parse_args(argv)
        _kernel_name()
    except UsageError as exc:
        print(f"tools/grade.py: {exc}", file=sys.stderr)
        return 2
    course = Course()
    results: list[Result] = []
    status = 0
    for path in args.paths:
        start = time.monotonic()
        try:
            result = grade(path, args.timeout, course, args.lab)
        except KeyboardInterrupt:  # Ctrl-C: its kernel is gone already; keep the grades so far
            print(f"interrupted at {path}: {len(results)} of {len(args.paths)} graded", file=sys.stderr)
            status = 130
            break
        except Exception as exc:  # the grader's own failure on this submission: a row, not a traceback
            result = Result(str(path), "", False, f"could not be graded: {type(exc).__name__}: {exc}"[:300])
        result.student = student_of(path, args.roots.get(path))
        results.append(result)
        verdict = f"{PASS} passed" if result.passed else f"{FAIL} {result.reason}"
        print(f"{path} (lab {result.lab or '?'}, {time.monotonic() - start:.1f} s): {verdict}", flush=True)
    write_csv(results, Path(args.csv))
    write_feedback(results, args.feedback)
    table = summary(results)
    summary_file = Path(args.csv).with_name(Path(args.csv).stem + "_summary.txt")
    summary_file.write_text(table + "\n", encoding="utf-8")
    print(table)
    print(
        f"grades written to {args.csv}, the summary to {summary_file.name}, "
        f"one feedback file per submission to {args.feedback}"
    )
    return status


if __name__ == "__main__":
    sys.exit(main())
