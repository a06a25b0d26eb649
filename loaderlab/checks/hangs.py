"""Lab 08 checker: a loader that no longer hangs on a lock inherited at fork time.

The dataset (``ClientDataset`` in ``lab08.py``) reads through a ``ResourceClient`` (think: a
connection pool) whose every read takes the client's lock; a background thread of the main process
holds that lock at times, and a worker forked then inherits a copy locked for ever.
``check_hang_fix(make_loader, ClientDataset)`` wants 2 workers, every read under a lock created in
the reading process, and a full epoch with the lock held while the workers start. Bounded: a worker
gives up on the lock after ``GIVE_UP_S`` s and the loader gets a timeout if it has none.
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

from loaderlab._validate import require_loader, require_positive, require_seconds
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


class ResourceClient:
    """A client whose ``read(index)`` takes ``self.lock`` and returns ``(index, guarded, own)``:
    1 if a real lock was held, 1 if that lock was created (or assigned) in the reading process.
    A lock not acquired within ``give_up_s`` raises TimeoutError; a pickled copy gets a new lock."""

    def __init__(self, give_up_s: float = GIVE_UP_S) -> None:
        self.give_up_s = require_seconds(give_up_s, "give_up_s", positive=True)
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
        if not hasattr(lock, "acquire"):  # e.g. contextlib.nullcontext(): no lock at all
            with lock:
                self.reads += 1
                return index, 0, int(self._lock_pid == os.getpid())
        if not lock.acquire(timeout=self.give_up_s):
            raise TimeoutError(f"the client's lock was not acquired within {self.give_up_s:g} s")
        try:
            self.reads += 1
            if isinstance(lock, type(threading.RLock())):  # held by this thread?
                held = bool(lock._is_owned())
            else:
                held = isinstance(lock, type(threading.Lock())) and lock.locked()
            return index, int(held), int(self._lock_pid == os.getpid())
        finally:
            lock.release()

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

    def __getstate__(self) -> dict[str, Any]:  # a lock cannot be pickled
        return {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_lock_pid")}

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


def epoch_with_lock_held(loader: DataLoader) -> EpochUnderLock:
    """Return the rows of one epoch over ``loader`` run while a background thread holds the
    dataset client's lock, or the one-line error that ended it; every worker is stopped after.

    Workers are forked where fork exists unless the loader picks a start method (a worker_init_fn
    defined in a notebook then works), with a timeout per batch, and the epoch stops after
    ``EPOCH_LIMIT_S`` s.
    """
    require_loader(loader)
    client = getattr(loader.dataset, "client", None)
    if not isinstance(client, ResourceClient):
        raise TypeError("loader.dataset must have a ResourceClient in .client (the lab's ClientDataset)")
    overrides: dict[str, Any] = {}
    context = loader.multiprocessing_context
    if context is None and can_fork():
        overrides["multiprocessing_context"] = context = "fork"
    if context is None:
        method = multiprocessing.get_start_method()
    else:
        method = context if isinstance(context, str) else context.get_start_method()
    if loader.num_workers > 0:  # spawned workers import torch before their first batch
        if method != "fork":
            overrides["timeout"] = SPAWN_TIMEOUT_S
        elif not 0 < loader.timeout <= LOADER_TIMEOUT_S:
            overrides["timeout"] = LOADER_TIMEOUT_S
    bounded = rebuild(loader, **overrides) if overrides else loader
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


@checker
def check_hang_fix(candidate: Callable[[Dataset], DataLoader], make_dataset: Callable[[], Dataset]) -> str:
    """Return a confirmation if ``candidate(make_dataset())`` builds a 2-worker loader that
    finishes an epoch while the client's lock is held in the main process, every read under a
    lock that the reading process created. ``make_dataset`` is the lab's ``ClientDataset``."""
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
    n = len(dataset)
    if n != N_ITEMS:
        raise Wrong(f"the lab's ClientDataset has {N_ITEMS} items, this one has {n}")
    loader = candidate(dataset)
    if not isinstance(loader, DataLoader):
        raise Wrong(f"make_loader must return a DataLoader, got {type(loader).__name__}")
    if loader.num_workers < WORKERS:
        raise Wrong(f"your loader has num_workers={loader.num_workers}: the contract keeps loading in "
                    f"{WORKERS} worker processes (num_workers=0 avoids the hang only by giving up "
                    f"parallel loading). {HINT}")
    if not isinstance(getattr(loader.dataset, "client", None), ResourceClient):
        raise Wrong("your loader must read the dataset it was given (its .client is the resource). " + HINT)
    result = epoch_with_lock_held(loader)
    error = result.error
    if error and "your code here" in error:
        raise NotImplementedError("your code here")  # an unfinished stub ran in a worker: ⏳
    if error and ("not acquired within" in error or "timed out" in error):
        if 0 < loader.timeout:
            raise Wrong(f"the epoch still failed ({error}): timeout= only turns the hang into an error, "
                        f"the workers still wait on the lock they inherited locked. {HINT}")
        raise Wrong(f"the epoch hangs: the workers wait for ever on the lock they inherited locked "
                    f"from the main process (this check gave up: {error}). {HINT}")
    if error:
        raise Wrong(f"the epoch failed in a worker: {error}")
    indices = sorted(row[0] for row in result.rows)
    if indices != list(range(n)):
        raise Wrong(f"the epoch yielded {len(indices)} items ({len(set(indices))} distinct) instead of "
                    f"each of the {n} indices once. {HINT}")
    unguarded = sum(1 for row in result.rows if not row[1])
    if unguarded:
        raise Wrong(f"{unguarded} of {n} reads happened without holding a real lock: removing the lock "
                    f"trades the hang for a race between threads. Give each worker its own lock "
                    f"instead. {HINT}")
    inherited = sum(1 for row in result.rows if not row[2])
    if inherited:
        raise Wrong(f"{inherited} of {n} reads used the lock the worker inherited from the main "
                    f"process (released by hand?): what it guarded may be half-updated; create a new "
                    f"lock or client in each worker instead. {HINT}")
    return (f"all {n} items read under a lock of each worker's own, with the main process's lock "
            f"held while the {loader.num_workers} workers started")
