"""Lab 08 checker: a loader that no longer hangs on a lock inherited at fork time.

The situation: the dataset reads through a ``ResourceClient`` (think: a connection pool, an
HTTP session) whose every read takes the client's lock. In the main process a background
thread (a heartbeat, a prefetcher) uses the same client, so the lock is sometimes held; a
worker *forked* at such a moment gets a copy of the lock that is locked for ever, because the
thread that would release it was not copied.

The lab writes the dataset (``ClientDataset`` in ``lab08.py``, reading through a
``ResourceClient`` from here: the client stands for a library's, and notes which process
created its lock) and passes its class: ``check_hang_fix(make_loader, ClientDataset)``.

The contract of ``make_loader(dataset) -> DataLoader``:

- loading stays in worker processes: ``num_workers=2`` (``num_workers=0`` dodges the problem by
  giving up workers, and is rejected);
- every read still happens under the client's lock (removing the lock trades the hang for a
  race), and that lock was created in the process that uses it (a worker must not keep using
  the copy it inherited, even released by hand: what the lock guarded may be half-updated);
- with the lock held in the main process while the workers start, one epoch yields every item.

The checker runs the epoch with the lock held; a worker waiting on it gives up after
``GIVE_UP_S`` seconds and the loader gets ``timeout=LOADER_TIMEOUT_S`` if it has none, so a
check never hangs (spawned workers get ``SPAWN_TIMEOUT_S``: they import torch first).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from loaderlab._validate import require_loader, require_positive
from loaderlab.checks.report import Wrong, checker, one_line
from loaderlab.env import can_fork
from loaderlab.loaders import rebuild
from loaderlab.measure import timed_pass

GIVE_UP_S = 3.0  # a real client waits for ever; this one raises TimeoutError after this
LOADER_TIMEOUT_S = 5.0  # DataLoader(timeout=...) the check adds when the loader has none
SPAWN_TIMEOUT_S = 30.0  # the same for spawned workers, whose start-up imports torch again
EPOCH_LIMIT_S = 40.0  # and the whole epoch may not take longer than this
HOLD_LIMIT_S = 30.0  # the background holder releases the lock after this, whatever happens
N_ITEMS, WORKERS = 16, 2
HINT = "Hint: notebook 08, section 'A worker that waits forever', Fix 1 and Fix 2"

_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


def _held_by_me(lock: Any) -> bool:
    """Return True if ``lock`` is a real lock, held right now (by this thread for an RLock)."""
    if isinstance(lock, type(threading.RLock())):
        return bool(lock._is_owned())
    return isinstance(lock, _LOCK_TYPES) and lock.locked()


class ResourceClient:
    """A client whose every ``read`` takes ``self.lock``; it notes in which process that lock
    was created (assigning ``client.lock = threading.Lock()`` counts as creating it there).

    ``read(index)`` returns ``(index, guarded, own)``: ``guarded`` is 1 if a real lock was held
    during the read, ``own`` is 1 if that lock was created in the reading process. A lock that
    cannot be acquired within ``give_up_s`` seconds raises TimeoutError (a real client would
    wait for ever). Pickling (spawn, forkserver) gives the copy a new lock.
    """

    def __init__(self, give_up_s: float = GIVE_UP_S) -> None:
        if isinstance(give_up_s, bool) or not isinstance(give_up_s, (int, float)) or give_up_s <= 0:
            raise ValueError(f"give_up_s must be a number of seconds > 0, got {give_up_s!r}")
        self.give_up_s = float(give_up_s)
        self.lock = threading.Lock()
        self.reads = 0

    @property
    def lock(self) -> Any:
        return self._lock

    @lock.setter
    def lock(self, value: Any) -> None:
        self._lock, self._lock_pid = value, os.getpid()

    def read(self, index: int) -> tuple[int, int, int]:
        lock = self.lock
        acquire = getattr(lock, "acquire", None)
        if acquire is not None:
            if not acquire(timeout=self.give_up_s):
                raise TimeoutError(f"the client's lock was not acquired within {self.give_up_s:g} s")
            context: Any = contextlib.ExitStack()
            context.callback(lock.release)
        else:  # e.g. contextlib.nullcontext(): no lock at all
            context = lock
        with context:
            self.reads += 1
            return index, int(_held_by_me(lock)), int(self._lock_pid == os.getpid())

    @contextlib.contextmanager
    def held_in_background(self, limit_s: float = HOLD_LIMIT_S) -> Iterator[threading.Thread]:
        """Return a context in which a daemon thread of this process holds ``self.lock``
        (released on exit, or after ``limit_s`` seconds at the latest)."""
        require_positive(limit_s, "limit_s", integer=False)
        acquired, stop = threading.Event(), threading.Event()
        lock = self.lock

        def hold() -> None:
            with lock:
                acquired.set()
                stop.wait(limit_s)

        thread = threading.Thread(target=hold, name="loaderlab-client-heartbeat", daemon=True)
        thread.start()
        if not acquired.wait(10.0):
            raise RuntimeError("the background thread did not get the client's lock within 10 s")
        try:
            yield thread
        finally:
            stop.set()
            thread.join(limit_s)

    def __getstate__(self) -> dict[str, Any]:
        # A lock cannot be pickled; the unpickled copy (in a spawned worker) gets a new one.
        state = dict(self.__dict__)
        state.pop("_lock", None)
        state.pop("_lock_pid", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.Lock()


@dataclass
class EpochUnderLock:
    """What ``epoch_with_lock_held`` saw: the items (rows ``[index, guarded, own]``) or the error."""

    rows: list[list[int]]
    error: str | None  # one line, e.g. "TimeoutError: the client's lock was not acquired ..."
    seconds: float
    start_method: str

    @property
    def finished(self) -> bool:
        return self.error is None


def _bounded(loader: DataLoader) -> DataLoader:
    """Return ``loader`` forked wherever fork exists (Linux, macOS) unless it chose its
    own start method, with a DataLoader timeout of at most LOADER_TIMEOUT_S seconds for forked
    workers (SPAWN_TIMEOUT_S for spawned ones: their first batch waits for a fresh Python to
    import torch)."""
    overrides: dict[str, Any] = {}
    context = loader.multiprocessing_context
    if context is None and can_fork():
        # Reproduce the Linux default even in a spawn session; it also lets workers run a
        # worker_init_fn defined in a notebook (__main__), which spawned workers cannot import.
        overrides["multiprocessing_context"] = context = "fork"
    method = _method_name(context)
    if loader.num_workers > 0:
        if method != "fork":
            overrides["timeout"] = SPAWN_TIMEOUT_S
        elif not 0 < loader.timeout <= LOADER_TIMEOUT_S:
            overrides["timeout"] = LOADER_TIMEOUT_S
    return rebuild(loader, **overrides) if overrides else loader


def _method_name(context: Any) -> str:
    if context is None:
        return multiprocessing.get_start_method()
    return context if isinstance(context, str) else context.get_start_method()


def epoch_with_lock_held(loader: DataLoader) -> EpochUnderLock:
    """Return the rows of one epoch over ``loader`` run while a background thread of this
    process holds the dataset client's lock, or the one-line error that ended it.

    Bounded: the workers are forked (unless the loader picks a start method) with a timeout
    of at most ``LOADER_TIMEOUT_S`` s per batch, a worker gives up on the lock after
    ``GIVE_UP_S`` s, and the epoch stops with TimeoutError after ``EPOCH_LIMIT_S`` s.
    Every worker is shut down before this returns.
    """
    require_loader(loader)
    client = getattr(loader.dataset, "client", None)
    if not isinstance(client, ResourceClient):
        raise TypeError("loader.dataset must have a ResourceClient in .client (the lab's ClientDataset)")
    bounded = _bounded(loader)
    method = _method_name(bounded.multiprocessing_context)
    with client.held_in_background():  # the pass timer kills the workers of an epoch cut short
        run = timed_pass(bounded, seconds=EPOCH_LIMIT_S, count_startup=True, keep=True, catch=True,
                         kill=True, close=True)
    rows: list[list[int]] = []
    error = one_line(run.error) if run.error is not None else None
    if error is None and not run.finished:
        error = f"TimeoutError: the epoch did not finish within {EPOCH_LIMIT_S:g} s"
    try:
        for batch in run.values:
            rows.extend(torch.as_tensor(batch).reshape(-1, 3).tolist())
    except Exception as exc:  # not the rows ResourceClient.read returns
        error = error or one_line(exc)
    return EpochUnderLock(rows, error, run.seconds, method)


def _lab_dataset(make_dataset: Any) -> Dataset:
    """Return ``make_dataset()``, a dataset of N_ITEMS items that reads through a ResourceClient
    in ``.client``, or raise Wrong with one sentence."""
    if not callable(make_dataset) or isinstance(make_dataset, Dataset):
        raise Wrong(f"pass the dataset's class as the second argument, check_hang_fix(make_loader, "
                    f"ClientDataset), got {type(make_dataset).__name__}")
    try:
        dataset = make_dataset()
    except Exception as exc:
        raise Wrong(f"ClientDataset() failed: {one_line(exc)}") from None
    if not isinstance(dataset, Dataset) or not isinstance(getattr(dataset, "client", None), ResourceClient):
        raise Wrong("the second argument must build the lab's ClientDataset (a Dataset that reads "
                    "through a ResourceClient in .client)")
    if len(dataset) != N_ITEMS:
        raise Wrong(f"the lab's ClientDataset has {N_ITEMS} items, this one has {len(dataset)}")
    return dataset


@checker
def check_hang_fix(candidate: Callable[[Dataset], DataLoader], make_dataset: Callable[[], Dataset]) -> str:
    """Return a confirmation if ``candidate(make_dataset())`` builds a 2-worker loader that
    finishes an epoch while the client's lock is held in the main process, every read under a
    lock that the reading process created. ``make_dataset`` is the lab's ``ClientDataset``."""
    dataset = _lab_dataset(make_dataset)
    loader = candidate(dataset)
    if not isinstance(loader, DataLoader):
        raise Wrong(f"make_loader must return a DataLoader, got {type(loader).__name__}")
    if loader.num_workers < WORKERS:
        raise Wrong(
            f"your loader has num_workers={loader.num_workers}: the contract keeps loading in "
            f"{WORKERS} worker processes (num_workers=0 avoids the hang only by giving up "
            f"parallel loading). {HINT}"
        )
    if not isinstance(getattr(loader.dataset, "client", None), ResourceClient):
        raise Wrong("your loader must read the dataset it was given (its .client is the resource). " + HINT)
    result = epoch_with_lock_held(loader)
    if not result.finished and "your code here" in result.error:
        raise NotImplementedError("your code here")  # an unfinished stub ran in a worker: ⏳
    if not result.finished:
        if "not acquired within" in result.error or "timed out" in result.error:
            if 0 < loader.timeout:
                raise Wrong(
                    f"the epoch still failed ({result.error}): timeout= only turns the hang into "
                    f"an error, the workers still wait on the lock they inherited locked. {HINT}"
                )
            raise Wrong(
                f"the epoch hangs: the workers wait for ever on the lock they inherited locked "
                f"from the main process (this check gave up: {result.error}). {HINT}"
            )
        raise Wrong(f"the epoch failed in a worker: {result.error}")
    indices = sorted(row[0] for row in result.rows)
    if indices != list(range(len(dataset))):
        raise Wrong(
            f"the epoch yielded {len(indices)} items ({len(set(indices))} distinct) instead of "
            f"each of the {len(dataset)} indices once. {HINT}"
        )
    unguarded = sum(1 for row in result.rows if not row[1])
    if unguarded:
        raise Wrong(
            f"{unguarded} of {len(dataset)} reads happened without holding a real lock: removing "
            f"the lock trades the hang for a race between threads. Give each worker its own "
            f"lock instead. {HINT}"
        )
    inherited = sum(1 for row in result.rows if not row[2])
    if inherited:
        raise Wrong(
            f"{inherited} of {len(dataset)} reads used the lock the worker inherited from the main "
            f"process (released by hand?): what it guarded may be half-updated; create a new "
            f"lock or client in each worker instead. {HINT}"
        )
    return (
        f"all {len(dataset)} items read under a lock of each worker's own, with the main "
        f"process's lock held while the {loader.num_workers} workers started"
    )
