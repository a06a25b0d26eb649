"""Worker failures reproduced safely: crashes, stack dumps, stale state, bounded children.

The lesson code of notebook 08 (its lock, record-file, crashing and epoch datasets, the
sampler that sends the epoch, the script that quits mid-epoch) is written by the notebook's
own cells (notebooks/lesson08*.py). What stays here are instruments (``consume``,
``run_bounded``, stack dumps) and the two datasets the doctor and its tests use. A child that
overruns its bound is stopped by ``run_bounded``.
"""

from __future__ import annotations

import contextlib
import faulthandler
import inspect
import multiprocessing
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from loaderlab.loaders import require_loader, require_positive, require_seconds, stop_workers

# -------------------------------------------------------------------------- crashes


class FetchError(Exception):
    """A custom exception whose constructor needs two arguments (path and reason)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


CRASH_MODES = ("raise", "custom", "kill")


class CrashingDataset(Dataset):
    """Returns ``index`` as a tensor, except at ``fail_at`` where it fails by ``mode``.

    ``"raise"`` raises ValueError, ``"custom"`` raises FetchError (two-argument constructor),
    ``"kill"`` kills its own process with SIGKILL — only in a worker: in the main process it
    raises RuntimeError instead, so a notebook kernel is never killed.
    """

    def __init__(self, n: int = 16, fail_at: int = 5, mode: str = "raise") -> None:
        require_positive(n, "n")
        if not isinstance(fail_at, int) or not 0 <= fail_at < n:
            raise ValueError(f"fail_at must be an index in 0..{n - 1}, got {fail_at!r}")
        if mode not in CRASH_MODES:
            raise ValueError(f"mode must be one of {CRASH_MODES}, got {mode!r}")
        self.n, self.fail_at, self.mode = n, fail_at, mode

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        if index == self.fail_at:
            self._fail(index)
        return torch.tensor(index)

    def _fail(self, index: int) -> None:
        if self.mode == "raise":
            raise ValueError(f"sample {index} is corrupt")
        if self.mode == "custom":
            raise FetchError(f"sample_{index}.jpg", "truncated file")
        if get_worker_info() is None:
            raise RuntimeError("mode='kill' only kills worker processes, not the main process")
        os.kill(os.getpid(), signal.SIGKILL)


def source_line(function: Callable[..., Any], text: str) -> int:
    """Return the file line number of the first line of ``function``'s source containing ``text``."""
    lines, start = inspect.getsourcelines(function)
    for offset, line in enumerate(lines):
        if text in line:
            return start + offset
    raise ValueError(f"text {text!r} not found in the source of {function.__qualname__}")


_PATH_IN_QUOTES = re.compile(r'"(?:/|[A-Za-z]:\\)[^"]*?[/\\]((?:torch|loaderlab)[/\\][^"]+|[^/\\"]+)"')
_PIDS = re.compile(r"\b(pid(?:\(s\))?) \d+(?:, \d+)*")


def readable(text: str) -> str:
    """Return ``text`` with machine-specific details removed: absolute paths in quotes become
    ``torch/...``, ``loaderlab/...`` or the file name, and process ids become ``N``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _PIDS.sub(r"\1 N", _PATH_IN_QUOTES.sub(r'"\1"', text))


@dataclass
class Outcome:
    """What ``consume`` saw: batches received, the error (if any) and how long it took."""

    batches: int
    seconds: float
    error_type: str | None = None
    error: str | None = None  # "Type: message", made readable (no paths, no pids)
    raised_at: str | None = None  # innermost frame of the live traceback: "file.py:LINE in func"
    cause: str | None = None  # the error it was raised from (``raise ... from``), made readable
    values: list[Any] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        return self.error is None


def consume(loader: DataLoader, max_batches: int | None = None) -> Outcome:
    """Return the Outcome of iterating ``loader`` (at most ``max_batches``), catching any error.

    Worker processes are shut down before this returns, even after an error (the exception's
    traceback would otherwise keep the iterator, and its workers, alive).
    """
    return consume_all([loader], max_batches)[0]


def consume_all(loaders: list[DataLoader], max_batches: int | None = None) -> list[Outcome]:
    """Return one Outcome per loader, like ``consume``, but start every loader's workers first
    (``iter`` on each) and only then drain them in order, so that slow start-ups (``spawn``)
    overlap instead of adding up.

    Put a loader whose worker is expected to die first: torch's SIGCHLD handler raises the
    death of *any* live iterator's worker in whichever ``next()`` is waiting at the time.
    """
    if not isinstance(loaders, (list, tuple)) or not loaders:
        raise TypeError("loaders must be a non-empty list of DataLoaders")
    for i, loader in enumerate(loaders):
        require_loader(loader, f"loaders[{i}]")
    require_positive(max_batches, "max_batches", allow_none=True)
    start = time.perf_counter()
    iterators: list[Any] = [None] * len(loaders)
    outcomes: list[Outcome | None] = [None] * len(loaders)
    # Start every loader's workers, the first loader's last: a worker of it that dies at once
    # cannot interrupt the start of another loader (the SIGCHLD handler raises wherever this
    # process is at the time; seen once as a healthy loader failing inside its own iter()).
    for i in reversed(range(len(loaders))):
        try:
            iterators[i] = iter(loaders[i])
        except Exception as exc:  # e.g. a worker argument that cannot be pickled
            outcomes[i] = _failed([], start, exc)
    try:
        for i, (loader, iterator) in enumerate(zip(loaders, iterators, strict=True)):
            if iterator is None:
                continue
            values: list[Any] = []
            try:
                while max_batches is None or len(values) < max_batches:
                    try:
                        values.append(next(iterator))
                    except StopIteration:
                        break
            except Exception as exc:  # the error is the measurement
                outcomes[i] = _failed(values, start, exc)
            else:
                outcomes[i] = Outcome(len(values), time.perf_counter() - start, values=values)
            _shut_down(loader, iterator)
    finally:
        for loader, iterator in zip(loaders, iterators, strict=True):
            _shut_down(loader, iterator)
        iterators.clear()
    return [o for o in outcomes if o is not None]


def _failed(values: list[Any], start: float, exc: Exception) -> Outcome:
    cause = exc.__cause__
    outcome = Outcome(
        len(values), time.perf_counter() - start, type(exc).__name__,
        readable(f"{type(exc).__name__}: {exc}"), traceback_tail(exc),
        readable(f"{type(cause).__name__}: {cause}".strip()) if cause is not None else None,
        values,
    )
    exc.__traceback__ = None  # frames would keep the iterator, and its workers, alive
    return outcome


def _shut_down(loader: DataLoader, iterator: Any) -> None:
    if iterator is not None and not loader.persistent_workers:
        stop_workers(iterator)


def traceback_tail(exc: BaseException) -> str | None:
    """Return the innermost frame of ``exc``'s live traceback as ``"file.py:LINE in func"``."""
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return f"{Path(code.co_filename).name}:{tb.tb_lineno} in {code.co_name}"


@contextlib.contextmanager
def child_stderr_to(path: str | Path) -> Iterator[Path]:
    """Return a context in which processes started here write their stderr to ``path``.

    It points file descriptor 2 at the file (and back on exit), so a spawned worker that dies
    before it can report anything leaves its traceback in the file instead of a terminal.
    """
    path = Path(path)
    if not path.parent.is_dir():
        raise ValueError(f"path must be in an existing directory, got {path.name!r}")
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as handle:
        os.dup2(handle.fileno(), 2)
        try:
            yield path
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


# ------------------------------------------------------------------ where is it stuck?

_DUMP_FILES: list[Any] = []  # faulthandler writes to these; they must stay open


def request_stack_dumps(
    directory: str | Path,
    n_workers: int,
    signum: int | None = None,
    settle_s: float = 0.3,
    timeout_s: float = 60.0,
) -> dict[int, str]:
    """Return ``{worker_id: stack text}``: signal each worker set up by ``StackDumpOnSignal``
    and wait (up to ``timeout_s``) for its dump. Only pids read from the dump files are signalled.

    Workers are signalled ``settle_s`` seconds after the last one has started, so that they
    have had time to reach the place where they are stuck.
    """
    require_positive(n_workers, "n_workers")
    timeout_s = require_seconds(timeout_s, "timeout_s", positive=True)
    settle_s = require_seconds(settle_s, "settle_s", positive=True)
    signum = int(signal.SIGUSR1) if signum is None else int(signum)
    directory = Path(directory)
    deadline = time.monotonic() + timeout_s
    paths = {i: directory / f"worker-{i}.stack" for i in range(n_workers)}
    pids: dict[int, int] = {}
    while len(pids) < n_workers and time.monotonic() < deadline:
        for i, path in paths.items():
            if i not in pids and path.exists():
                first = path.read_text().split("\n", 1)[0]
                if first.isdigit():
                    pids[i] = int(first)
        time.sleep(0.02)
    time.sleep(settle_s)
    for pid in list(pids.values()):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:  # that worker is gone: nothing to dump
            pids = {i: p for i, p in pids.items() if p != pid}
    dumps: dict[int, str] = {}
    while len(dumps) < len(pids) and time.monotonic() < deadline:
        for i in pids:
            text = paths[i].read_text().split("\n", 1)[1]
            if i not in dumps and "File" in text:
                time.sleep(0.05)  # let faulthandler finish writing
                dumps[i] = paths[i].read_text().split("\n", 1)[1]
        time.sleep(0.02)
    return dumps


_FRAME = re.compile(r'File "([^"]+)", line (\d+) in (\S+)')


def stack_frames(dump: str) -> list[str]:
    """Return one thread's frames from a faulthandler dump, innermost first, as
    ``"file.py:LINE in func"``: the thread running ``_worker_loop`` (a DataLoader worker's main
    thread) if there is one, else the first thread listed."""
    if not isinstance(dump, str):
        raise TypeError(f"dump must be a str, got {type(dump).__name__}")
    blocks = [b for b in dump.split("\n\n") if "File" in b]
    if not blocks:
        return []
    block = next((b for b in blocks if "_worker_loop" in b), blocks[0])
    return [f"{Path(f).name}:{line} in {func}" for f, line, func in _FRAME.findall(block)]


# --------------------------------------------------------------------- stale state


class EpochDataset(Dataset):
    """Returns ``(index, epoch this process sees, pid)`` as a LongTensor of 3.

    ``dataset.epoch = e`` in the main process stores a plain int (``shared=False``: each worker
    keeps the copy it started with) or writes a shared-memory tensor (``shared=True``: every
    worker reads the current value). An index ``(i, e)`` (from a sampler that sends the epoch) overrides both.
    """

    def __init__(self, n: int = 16, shared: bool = False) -> None:
        require_positive(n, "n")
        self.n, self.shared = n, bool(shared)
        self._epoch = 0
        self._shared_epoch = torch.zeros((), dtype=torch.long).share_memory_() if shared else None

    @property
    def epoch(self) -> int:
        if self._shared_epoch is not None:
            return int(self._shared_epoch.item())
        return self._epoch

    @epoch.setter
    def epoch(self, value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"epoch must be an int >= 0, got {value!r}")
        if self._shared_epoch is not None:
            self._shared_epoch.fill_(value)
        else:
            self._epoch = value

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int | tuple[int, int]) -> torch.Tensor:
        if isinstance(index, tuple):
            index, epoch = index
        else:
            epoch = self.epoch
        return torch.tensor([index, epoch, os.getpid()])


# ------------------------------------------------------------------- bounded children

_CHILD_CODE = "import sys; from loaderlab.failures import _bounded_child_main; _bounded_child_main(sys.argv[1])"
_SELF_BOUND_SLACK_S = 30.0  # an orphaned child (its parent died) ends itself this long after its bound
_DUMP_WAIT_S = 1.0  # how long an overrunning child gets to write its stack before it is killed
_SETTLE_S = 2.0  # how long processes a finished child started get to exit before they count as left behind


@dataclass
class ChildReport:
    """What a bounded child did: the value its function returned, or why there is none."""

    function: str  # "module.name" of the function it ran
    bound_s: float
    seconds: float  # from its start until it exited or was stopped
    overran: bool  # still running at bound_s: stopped, with every process in its group
    returncode: int | None
    value: Any = None
    error: str | None = None  # "Type: message" of what the function raised, or why no value came
    stuck_at: list[str] = field(default_factory=list)  # an overrun child's main thread, innermost first
    log: str = field(default="", repr=False)  # what the child and its workers wrote to stdout/stderr
    exited_at: float | None = None  # time.time() when it exited by itself (None: it was stopped)
    left_running: int = 0  # processes it started still running _SETTLE_S after it exited (then killed)

    @property
    def finished(self) -> bool:
        """True if the function returned a value within the bound."""
        return not self.overran and self.error is None

    def summary(self) -> str:
        """Return one line: finished within the bound, overran it and was stopped, or failed."""
        if self.overran:
            where = f" (stuck at {self.stuck_at[0]})" if self.stuck_at else ""
            return f"the demo overran its {self.bound_s:g} s bound and was stopped{where}"
        if self.error is not None:
            return f"the demo failed in its child process: {self.error.splitlines()[0]}"
        return f"the demo finished within its {self.bound_s:g} s bound"


class BoundedChild:
    """A fresh Python, started at once in its own process group, that runs one importable
    function; ``report()`` waits for it and returns a ChildReport.

    Arguments and the result travel pickled (through files), so they may be DataLoaders,
    datasets and tensors. The child uses ``start_method`` for its DataLoader workers (None:
    Python's default). It is stopped at ``bound_s`` seconds after its start: first asked for
    its stack (SIGUSR1, ``faulthandler``), then killed with every process in its group (its
    workers, a forkserver, a resource tracker); after a normal exit the group is killed too,
    so no process outlives ``report()``. A child whose parent dies ends itself
    ``_SELF_BOUND_SLACK_S`` after its bound. A command ``prefix`` (``unshare ...``) may wrap it.
    """

    def __init__(self, function: Callable[..., Any], args: tuple[Any, ...] = (),
                 kwargs: dict[str, Any] | None = None, bound_s: float = 30.0,
                 start_method: str | None = None, prefix: list[str] | None = None) -> None:
        module, name = getattr(function, "__module__", None), getattr(function, "__qualname__", "")
        if not callable(function) or module in (None, "__main__") or "<" in name:
            raise ValueError("function must be a function defined at the top level of an importable "
                             f"module (not in a notebook cell), got {function!r}")
        self.bound_s = require_seconds(bound_s, "bound_s", positive=True)
        if start_method is not None and start_method not in multiprocessing.get_all_start_methods():
            raise ValueError(f"start_method must be one of {multiprocessing.get_all_start_methods()}, "
                             f"got {start_method!r}")
        self.function = f"{module}.{name}"
        self._dir = Path(tempfile.mkdtemp(prefix="loaderlab-child-"))
        self._paths = {key: self._dir / key for key in ("payload", "result", "log", "stack")}
        try:
            with open(self._paths["payload"], "wb") as handle:  # fails if an argument cannot pickle
                pickle.dump((function, tuple(args), dict(kwargs or {}), start_method, self.bound_s,
                             str(self._paths["result"]), str(self._paths["stack"])), handle)
        except BaseException:
            shutil.rmtree(self._dir, ignore_errors=True)
            raise
        with open(self._paths["log"], "wb") as log:
            self.started = time.monotonic()
            self.process = subprocess.Popen(
                [*(prefix or []), sys.executable, "-c", _CHILD_CODE, str(self._paths["payload"])],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self._report: ChildReport | None = None

    def report(self) -> ChildReport:
        """Return the ChildReport, waiting for the child (at most until its bound) first."""
        if self._report is not None:
            return self._report
        pid = self.process.pid
        exited_at, left_running = None, 0
        try:
            exited = _wait_for_exit(self.process, self.started + self.bound_s)
            if exited:  # did it leave processes behind (workers it never shut down)?
                exited_at = time.time()
                settle = time.monotonic() + _SETTLE_S
                while _group_members(pid) and time.monotonic() < settle:
                    time.sleep(0.05)
                left_running = len(_group_members(pid))
            if not exited:  # ask for its stack (faulthandler), give it a moment to write it
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGUSR1)
                _wait_for_exit(self.process, time.monotonic() + _DUMP_WAIT_S)
        finally:  # also on KeyboardInterrupt: nothing of the child may outlive this call
            _kill_group(pid)
            self.process.wait()
        seconds = time.monotonic() - self.started
        self._report = self._read(overran=not exited, seconds=seconds)
        self._report.exited_at, self._report.left_running = exited_at, left_running
        shutil.rmtree(self._dir, ignore_errors=True)
        return self._report

    def result(self) -> Any:
        """Return the function's value; raise RuntimeError if the child overran or failed."""
        report = self.report()
        if report.overran:
            raise RuntimeError(f"child did not finish within {report.bound_s:.0f} s")
        if report.error is not None:
            raise RuntimeError(f"child failed: {report.error}")
        return report.value

    def _read(self, overran: bool, seconds: float) -> ChildReport:
        log = self._paths["log"].read_text(errors="replace")
        value, error = None, None
        try:
            with open(self._paths["result"], "rb") as handle:
                kind, value = pickle.load(handle)
            if kind == "raised":
                value, error = None, value
        except (OSError, EOFError, pickle.UnpicklingError):
            tail = "\n".join(log.strip().splitlines()[-5:])
            error = None if overran else f"exited with code {self.process.returncode} and no result: {tail}"
        stuck_at: list[str] = []
        if overran and self._paths["stack"].exists():
            blocks = [b for b in self._paths["stack"].read_text(errors="replace").split("\n\n") if "File" in b]
            if blocks:  # faulthandler lists the newest thread first: the main thread is the last
                stuck_at = [f"{Path(f).name}:{line} in {func}" for f, line, func in _FRAME.findall(blocks[-1])]
        return ChildReport(self.function, self.bound_s, seconds, overran, self.process.returncode,
                           value, error, stuck_at, log)

    def __del__(self) -> None:  # a child that is never read is not left running
        if getattr(self, "_report", True) is None:
            _kill_group(self.process.pid)
            self.process.wait()
            shutil.rmtree(self._dir, ignore_errors=True)


def run_bounded(function: Callable[..., Any], *args: Any, bound_s: float = 30.0,
                start_method: str | None = "same", prefix: list[str] | None = None,
                **kwargs: Any) -> BoundedChild:
    """Return a started BoundedChild that runs ``function(*args, **kwargs)`` in a fresh Python
    and is stopped, with all its processes, after ``bound_s`` seconds; call ``.report()``.

    Its DataLoader workers start the way this process's would (``start_method="same"``), or
    by ``start_method`` (None: Python's default). ``function`` and its arguments must pickle;
    ``bound_s``, ``start_method`` and ``prefix`` are this function's own keywords.
    """
    if start_method == "same":
        start_method = multiprocessing.get_start_method()
    return BoundedChild(function, args, kwargs, bound_s=bound_s, start_method=start_method, prefix=prefix)


def consume_each(loaders: dict[str, DataLoader], max_batches: int | None = None) -> dict[str, Outcome]:
    """Return ``{name: Outcome}``: ``consume`` each loader in turn (one fresh Python, several
    demos: a bounded child's function)."""
    if not isinstance(loaders, dict) or not loaders:
        raise TypeError("loaders must be a non-empty dict of DataLoaders")
    return {name: consume(loader, max_batches) for name, loader in loaders.items()}


def _bounded_child_main(payload_path: str) -> None:
    """Run in the child: load the payload, apply the start method, call, write the result."""
    with open(payload_path, "rb") as handle:
        head = pickle.load(handle)  # may fail: an argument this fresh Python cannot import
    function, args, kwargs, start_method, bound_s, result_path, stack_path = head
    stack_file = open(stack_path, "w")  # noqa: SIM115 - must stay open for faulthandler
    _DUMP_FILES.append(stack_file)
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True)
    faulthandler.dump_traceback_later(bound_s + _SELF_BOUND_SLACK_S, exit=True)  # orphaned: end
    if start_method is not None:
        multiprocessing.set_start_method(start_method, force=True)
    try:
        outcome: tuple[str, Any] = ("value", function(*args, **kwargs))
        data = pickle.dumps(outcome)
    except Exception as exc:  # reported to the parent, like the value
        data = pickle.dumps(("raised", readable(f"{type(exc).__name__}: {exc}")))
        exc.__traceback__ = None
    partial = result_path + ".partial"
    with open(partial, "wb") as handle:
        handle.write(data)
    os.replace(partial, result_path)  # the parent never reads half a result


def _wait_for_exit(process: subprocess.Popen, deadline: float) -> bool:
    """Return True once ``process`` has exited, False at ``deadline``. The exited child is
    left unreaped (``WNOWAIT``), so its pid, and so its process group id, cannot be reused
    before ``_kill_group``."""
    while True:
        if process.returncode is not None:
            return True
        if hasattr(os, "waitid"):
            try:
                if os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return True
            except ChildProcessError:  # already reaped
                return True
        elif process.poll() is not None:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def _kill_group(pgid: int, wait_s: float = 5.0) -> None:
    """Kill every process in group ``pgid``; return once none of them runs (at most ``wait_s``)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    deadline = time.monotonic() + wait_s
    while _group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)  # SIGKILL is delivered, not waited for


def _group_members(pgid: int) -> list[int]:
    """Return the pids of the processes in group ``pgid`` that are not zombies."""
    members = []
    for proc in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc.pid)
    return members
