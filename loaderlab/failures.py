"""What a failing loader leaves to read (notebooks 07, 08, 13 and 14): run loaders and keep
the error instead of raising (``consume``, ``consume_each``: a bounded child's function, see
``loaderlab.bounded``), a crashed worker's stderr in a file, stack dumps of stuck workers, and the
source line a lesson points at. ``CrashingDataset`` fails on purpose (the doctor's tests use it;
notebook 08 writes its own in ``lesson08_crashing.py``).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from loaderlab._validate import require_loader, require_positive, require_seconds
from loaderlab.bounded import frames, readable
from loaderlab.loaders import stop_workers
from loaderlab.measure import Pass, timed_pass, traceback_tail

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
        # SIGKILL, as the out-of-memory killer sends it; Windows has none, and there os.kill with
        # SIGTERM calls TerminateProcess: the same abrupt end, reported as an unexpected exit
        os.kill(os.getpid(), signal.SIGKILL if hasattr(signal, "SIGKILL") else signal.SIGTERM)


def source_line(function: Callable[..., Any], text: str) -> int:
    """Return the file line number of the first line of ``function``'s source containing ``text``."""
    lines, start = inspect.getsourcelines(function)
    for offset, line in enumerate(lines):
        if text in line:
            return start + offset
    raise ValueError(f"text {text!r} not found in the source of {function.__qualname__}")


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
            outcomes[i] = _outcome(Pass(error=exc, raised_at=traceback_tail(exc)), start)
            exc.__traceback__ = None
    try:
        for i, (loader, iterator) in enumerate(zip(loaders, iterators, strict=True)):
            if iterator is not None:  # the pass timer stops its workers, even after an error
                iterators[i] = None
                run = timed_pass(loader, max_batches, keep=True, catch=True, iterator=iterator)
                outcomes[i] = _outcome(run, start)
    finally:
        for loader, iterator in zip(loaders, iterators, strict=True):
            if iterator is not None and not loader.persistent_workers:
                stop_workers(iterator)
        iterators.clear()
    return [o for o in outcomes if o is not None]


def _outcome(run: Pass, start: float) -> Outcome:
    exc = run.error
    if exc is None:
        return Outcome(run.batches, time.perf_counter() - start, values=run.values)
    cause = exc.__cause__
    return Outcome(
        run.batches,
        time.perf_counter() - start,
        type(exc).__name__,
        readable(f"{type(exc).__name__}: {exc}"),
        run.raised_at,
        readable(f"{type(cause).__name__}: {cause}".strip()) if cause is not None else None,
        run.values,
    )


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


def request_stack_dumps(
    directory: str | Path,
    n_workers: int,
    signum: int | None = None,
    settle_s: float = 0.3,
    timeout_s: float = 60.0,
) -> dict[int, str]:
    """Return ``{worker_id: stack text}``: signal each worker whose worker_init_fn registered
    ``faulthandler`` on ``signum`` (default SIGUSR1), writing its pid on the first line of
    ``directory/worker-<id>.stack`` (notebook 08's ``lesson08_locks.py``), and wait (up to
    ``timeout_s``) for its dump. Only pids read from the dump files are signalled.

    Workers are signalled ``settle_s`` seconds after the last one has started, so that they
    have had time to reach the place where they are stuck. Windows has no SIGUSR1: without a
    ``signum`` this raises NotImplementedError there, saying so in one sentence.
    """
    require_positive(n_workers, "n_workers")
    timeout_s = require_seconds(timeout_s, "timeout_s", positive=True)
    settle_s = require_seconds(settle_s, "settle_s", positive=True)
    if signum is None and not hasattr(signal, "SIGUSR1"):
        raise NotImplementedError(
            "stack dumps on a signal need SIGUSR1, which Windows lacks: run this "
            "section on Linux, macOS or WSL2"
        )
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


def stack_frames(dump: str) -> list[str]:
    """Return one thread's frames from a faulthandler dump, innermost first, as
    ``"file.py:LINE in func"``: the thread running ``_worker_loop`` (a DataLoader worker's main
    thread) if there is one, else the first thread listed."""
    if not isinstance(dump, str):
        raise TypeError(f"dump must be a str, got {type(dump).__name__}")
    blocks = [b for b in dump.split("\n\n") if "File" in b]
    if not blocks:
        return []
    return frames(next((b for b in blocks if "_worker_loop" in b), blocks[0]))


def consume_each(loaders: dict[str, DataLoader], max_batches: int | None = None) -> dict[str, Outcome]:
    """Return ``{name: Outcome}``: ``consume`` each loader in turn (one fresh Python, several
    demos: a bounded child's function)."""
    if not isinstance(loaders, dict) or not loaders:
        raise TypeError("loaders must be a non-empty dict of DataLoaders")
    return {name: consume(loader, max_batches) for name, loader in loaders.items()}
