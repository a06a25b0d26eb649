"""Lab 08's scaffolding: ``ResourceClient`` (think: a connection pool) whose every read takes the
client's lock, and ``epoch_with_lock_held(loader)``, one epoch run while a background thread of
the main process holds that lock: a worker forked then inherits a copy locked for ever. Bounded:
a read gives up on the lock after ``GIVE_UP_S`` s and the loader gets a timeout if it has none.
The lab and its checker (``loaderlab.checks.lab08``) both use them."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.data import DataLoader

from loaderlab._validate import require_loader, require_positive, require_seconds
from loaderlab.env import can_fork
from loaderlab.loaders import rebuild
from loaderlab.measure import timed_pass
from loaderlab.messages import one_line

GIVE_UP_S = 3.0  # a real client waits for ever; this one raises TimeoutError after this
LOADER_TIMEOUT_S = 5.0  # DataLoader(timeout=...) the check adds when the loader has none
SPAWN_TIMEOUT_S = 30.0  # the same for spawned workers, whose start-up imports torch again
EPOCH_LIMIT_S = 40.0  # and the whole epoch may not take longer than this
HOLD_LIMIT_S = 30.0  # the background holder releases the lock after this, whatever happens


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
                held = bool(lock._is_owned())  # type: ignore[attr-defined]  # RLock has no public test
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
