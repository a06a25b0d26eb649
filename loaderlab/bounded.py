"""Bounded children: run a function in a fresh Python, or a command line (torchrun), in a
process group of its own that is stopped, with everything it started, after a time bound.

``run_bounded`` is the one implementation: notebooks 07, 08, 13 and 15 run demos that may
crash or hang in it (``run_bounded(function, *args, bound_s=...)``), notebooks 10, 11 and 12 run
torchrun and scripts (``run_bounded(argv, bound_s=...)``). ``private_shm_prefix`` (15) gives a
child its own small ``/dev/shm``; ``readable`` and ``stable_error`` make what a child reports
printable as stable output.
"""

from __future__ import annotations

import contextlib
import faulthandler
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loaderlab._validate import require_positive, require_seconds
from loaderlab.processes import group_members, kill_tree

SHM_PATH = "/dev/shm"
_CHILD_CODE = "import sys; from loaderlab.bounded import _child_main; _child_main(sys.argv[1])"
_SELF_BOUND_SLACK_S = 30.0  # an orphaned child (its parent died) ends itself this long after its bound
_DUMP_WAIT_S = 1.0  # how long an overrunning child gets to write its stack before it is killed
_SETTLE_S = 2.0  # how long processes a finished child started get to exit before they count as left behind
_DUMP_FILES: list[Any] = []  # faulthandler writes to these; they must stay open
_FRAME = re.compile(r'File "([^"]+)", line (\d+) in (\S+)')
_PATH_IN_QUOTES = re.compile(r'"(?:/|[A-Za-z]:\\)[^"]*?[/\\]((?:torch|loaderlab)[/\\][^"]+|[^/\\"]+)"')
_PIDS = re.compile(r"\b(pid(?:\(s\))?) \d+(?:, \d+)*")
_SEGMENT = re.compile(r"torch_\d+_\d+(_\d+)?")
_WORKER_ID = re.compile(r"\bworker process \d+")


def readable(text: str) -> str:
    """Return ``text`` with machine-specific details removed: absolute paths in quotes become
    ``torch/...``, ``loaderlab/...`` or the file name, and process ids become ``N``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _PIDS.sub(r"\1 N", _PATH_IN_QUOTES.sub(r'"\1"', text))


def stable_error(text: str) -> str:
    """Return the first and last line of an error message with process ids, shared-memory
    segment names and worker numbers made stable (``pid N``, ``torch_N``, ``worker process N``):
    the parts that are the same on every run."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(
        _WORKER_ID.sub("worker process N", _PIDS.sub("pid N", _SEGMENT.sub("torch_N", line)))
        for line in lines[:1] + lines[1:][-1:]
    )


def frames(block: str) -> list[str]:
    """Return the frames of one thread of a faulthandler dump as ``"file.py:LINE in func"``."""
    return [f"{Path(f).name}:{line} in {func}" for f, line, func in _FRAME.findall(block)]


@dataclass
class ChildReport:
    """What a bounded child did: the value its function returned (or its exit code and output,
    for a command line), or why there is none."""

    function: str  # "module.name" of the function it ran, or the command's program
    bound_s: float
    seconds: float  # from its start until it exited or was stopped
    overran: bool  # still running at bound_s: stopped, with every process it started
    returncode: int | None
    value: Any = None
    error: str | None = None  # "Type: message" of what the function raised, or why no value came
    stuck_at: list[str] = field(default_factory=list)  # an overrun child's main thread, innermost first
    log: str = field(default="", repr=False)  # what the child and its workers wrote to stdout/stderr
    exited_at: float | None = None  # time.time() when it exited by itself (None: it was stopped)
    left_running: int = 0  # processes it started still running _SETTLE_S after it exited (then killed)

    output = property(lambda self: self.log, doc="What it printed (a command line's output).")
    wall_s = property(lambda self: self.seconds, doc="Its wall time in seconds.")
    timed_out = property(lambda self: self.overran, doc="True if it ran past its bound.")

    @property
    def finished(self) -> bool:
        """True if the function returned a value (a command exited) within the bound."""
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
    """A process started at once in a session of its own: a fresh Python that runs one
    importable function (arguments and result travel pickled, through files, so they may be
    DataLoaders, datasets and tensors), or a command line. ``report()`` waits for it.

    At ``bound_s`` after its start a function's child is asked for its stack (SIGUSR1,
    ``faulthandler``); then every process it started is killed: its process group (workers, a
    forkserver, a resource tracker) and its descendants in sessions of their own (torchrun
    starts each rank so). After a normal exit the group is killed too: nothing outlives
    ``report()``. A function's child whose parent dies ends itself ``_SELF_BOUND_SLACK_S``
    after its bound. ``prefix`` (``unshare ...``, ``env X=1``) wraps the command.
    """

    def __init__(
        self,
        target: Callable[..., Any] | Sequence[str],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        bound_s: float = 30.0,
        start_method: str | None = None,
        prefix: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.bound_s = require_seconds(bound_s, "bound_s", positive=True)
        self._dir = Path(tempfile.mkdtemp(prefix="loaderlab-child-"))
        self._paths = {key: self._dir / key for key in ("payload", "result", "log", "stack")}
        self._report: ChildReport | None = None
        self.is_command = not callable(target)
        try:
            argv = self._argv(target, args, kwargs, start_method)
        except BaseException:
            shutil.rmtree(self._dir, ignore_errors=True)
            raise
        with open(self._paths["log"], "wb") as log:
            self.started = time.monotonic()
            self.process = subprocess.Popen(
                [*(prefix or []), *argv],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=None if env is None else dict(env),
            )

    def _argv(
        self, target: Any, args: tuple, kwargs: dict[str, Any] | None, start_method: str | None
    ) -> list[str]:
        if self.is_command:
            if isinstance(target, (str, bytes)) or not isinstance(target, Sequence) or not target:
                raise TypeError(
                    f"run_bounded needs a function or a command line (a list of str), got {target!r}"
                )
            self.function = Path(str(target[0])).name
            return [str(part) for part in target]
        module, name = getattr(target, "__module__", None), getattr(target, "__qualname__", "")
        if module in (None, "__main__") or "<" in name:
            raise ValueError(
                "function must be a function defined at the top level of an importable "
                f"module (not in a notebook cell), got {target!r}"
            )
        methods = multiprocessing.get_all_start_methods()
        if start_method is not None and start_method not in methods:
            raise ValueError(f"start_method must be one of {methods}, got {start_method!r}")
        self.function = f"{module}.{name}"
        with open(self._paths["payload"], "wb") as handle:  # fails if an argument cannot pickle
            pickle.dump(
                (
                    target,
                    tuple(args),
                    dict(kwargs or {}),
                    start_method,
                    self.bound_s,
                    str(self._paths["result"]),
                    str(self._paths["stack"]),
                ),
                handle,
            )
        return [sys.executable, "-c", _CHILD_CODE, str(self._paths["payload"])]

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
                while group_members(pid) and time.monotonic() < settle:
                    time.sleep(0.05)
                left_running = len(group_members(pid))
            elif not self.is_command and hasattr(signal, "SIGUSR1"):  # Windows has no SIGUSR1: no stack
                with contextlib.suppress(OSError):  # ask for its stack (faulthandler), let it write it
                    os.kill(pid, signal.SIGUSR1)
                _wait_for_exit(self.process, time.monotonic() + _DUMP_WAIT_S)
        finally:  # also on KeyboardInterrupt: nothing of the child may outlive this call
            kill_tree(pid)
            self.process.wait()
        self._report = self._read(overran=not exited, seconds=time.monotonic() - self.started)
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
        if self.is_command:
            if overran:
                log += f"\n[loaderlab] killed after the {self.bound_s:g} s bound"
        else:
            try:
                with open(self._paths["result"], "rb") as handle:
                    kind, value = pickle.load(handle)
                if kind == "raised":
                    value, error = None, value
            except (OSError, EOFError, pickle.UnpicklingError):
                tail = "\n".join(log.strip().splitlines()[-5:])
                code = self.process.returncode
                error = None if overran else f"exited with code {code} and no result: {tail}"
        stuck_at: list[str] = []
        if overran and self._paths["stack"].exists():
            stack = self._paths["stack"].read_text(errors="replace")
            blocks = [b for b in stack.split("\n\n") if "File" in b]
            if blocks:  # faulthandler lists the newest thread first: the main thread is the last
                stuck_at = frames(blocks[-1])
        return ChildReport(
            self.function,
            self.bound_s,
            seconds,
            overran,
            self.process.returncode,
            value,
            error,
            stuck_at,
            log,
        )

    def __del__(self) -> None:  # a child that is never read is not left running
        if getattr(self, "_report", True) is None and hasattr(self, "process"):
            kill_tree(self.process.pid)
            self.process.wait()
            shutil.rmtree(self._dir, ignore_errors=True)


def run_bounded(
    target: Callable[..., Any] | Sequence[str],
    *args: Any,
    bound_s: float = 30.0,
    start_method: str | None = "same",
    prefix: list[str] | None = None,
    env: dict[str, str] | None = None,
    **kwargs: Any,
) -> BoundedChild:
    """Return a started BoundedChild that runs ``target(*args, **kwargs)`` in a fresh Python, or
    the command line ``target`` (a list of str), and is stopped with everything it started
    after ``bound_s`` seconds; call ``.report()`` (or ``.result()``).

    A function's DataLoader workers start the way this process's would (``start_method="same"``),
    or by ``start_method`` (None: Python's default); it and its arguments must pickle.
    ``bound_s``, ``start_method``, ``prefix`` and ``env`` (a command's environment) are this
    function's own keywords.
    """
    if start_method == "same":
        start_method = multiprocessing.get_start_method()
    return BoundedChild(
        target, args, kwargs, bound_s=bound_s, start_method=start_method, prefix=prefix, env=env
    )


def _child_main(payload_path: str) -> None:
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
    before ``kill_tree``."""
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


_PRIVATE_SHM: dict[int, list[str] | None] = {}


def private_shm_prefix(shm_mb: int = 64) -> list[str] | None:
    """Return the command prefix that runs a program with its own ``shm_mb`` MB tmpfs on
    ``/dev/shm`` (a private mount namespace: the real ``/dev/shm`` is never touched), or None
    where that is impossible (not Linux, no ``unshare``, no right to mount)."""
    require_positive(shm_mb, "shm_mb")
    if shm_mb in _PRIVATE_SHM:
        return _PRIVATE_SHM[shm_mb]
    prefix = None
    if sys.platform.startswith("linux") and shutil.which("unshare") and os.path.isdir(SHM_PATH):
        mount = f'mount -t tmpfs -o size={shm_mb}m loaderlab-shm {SHM_PATH} && exec "$@"'
        for flags in (["--mount"], ["--user", "--map-root-user", "--mount"]):
            candidate = ["unshare", *flags, "--propagation", "private", "sh", "-c", mount, "sh"]
            try:
                probe = subprocess.run([*candidate, "true"], capture_output=True, timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if probe.returncode == 0:
                prefix = candidate
                break
    _PRIVATE_SHM[shm_mb] = prefix
    return prefix
