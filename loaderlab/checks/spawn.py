"""Checker for lab 12: a loader whose workers start under ``spawn`` and deliver the same batches.

The student writes ``make_loader() -> DataLoader`` with ``num_workers >= 1``; its Dataset,
collate_fn and worker_init_fn live in ``lab12.py``, which spawned workers import. The checker
first pickles what a worker receives (Dataset, collate_fn, worker_init_fn) with a pickler that
names the first lambda, function defined inside a function, or class or function defined in the
notebook (``__main__``, which a spawned worker cannot import): each of those is a wrong answer
with its reason, found in milliseconds. Then it reads one epoch of the loader with its workers
(at most 2) started by ``spawn``, whatever the session's start method, and compares it with an
epoch of a fresh ``make_loader()`` rebuilt with ``num_workers=0``.
"""

from __future__ import annotations

import itertools
import pickle
import types
import warnings
from collections.abc import Callable
from typing import Any

from torch.utils.data import DataLoader

from loaderlab.checks.report import Wrong, checker, one_line
from loaderlab.loaders import rebuild, same_batch, stop_workers

HINT = "Hint: notebook 12, section 3 'What must be picklable'."
MAX_WORKERS = 2
MAX_BATCHES = 1000
TIMEOUT_S = 60.0  # per batch: a spawned worker imports torch first (seconds on a busy machine)


class _Sink:
    """A file that forgets what is written: only whether pickling succeeds matters."""

    def write(self, data: bytes) -> int:
        return len(data)


class _Unsafe(Exception):
    pass


class _FindUnsafe(pickle.Pickler):
    """Pickles like a worker's arguments are pickled, but stops at the first object pickled by a
    name that a spawned worker cannot import."""

    def __init__(self, top: Any) -> None:
        super().__init__(_Sink(), protocol=pickle.HIGHEST_PROTOCOL)
        self.top = top

    def reducer_override(self, obj: Any) -> Any:
        target = obj if isinstance(obj, (types.FunctionType, type)) else type(obj)
        name = getattr(target, "__qualname__", "?")
        verb = "is" if target is self.top else "is a" if target is type(self.top) else "uses"
        if name == "<lambda>" or name.endswith(".<lambda>"):
            article = "uses a" if verb == "uses" else "is a"
            raise _Unsafe(f"{article} lambda (`{name}`): pickle stores a function by its "
                          f"importable name, which a lambda has not; use a def at module level "
                          f"in lab12.py")
        if "<locals>" in name:
            raise _Unsafe(f"{verb} `{name}`, defined inside a function: pickle stores it by its "
                          f"importable name, which it has not; define it at module level in "
                          f"lab12.py (functools.partial binds extra arguments)")
        if getattr(target, "__module__", None) == "__main__":
            raise _Unsafe(f"{verb} `{name}`, defined in the notebook (__main__): it pickles by "
                          f"name, but a spawned worker cannot import the notebook and dies with "
                          f"AttributeError; write it in lab12.py and import it from there")
        return NotImplemented


def _require_picklable(what: str, obj: Any) -> None:
    try:
        _FindUnsafe(obj).dump(obj)
    except _Unsafe as unsafe:
        raise Wrong(f"{what} {unsafe}. {HINT}") from None
    except Exception as exc:  # noqa: BLE001 - any pickling error is the answer's
        raise Wrong(f"{what} cannot be pickled for a spawned worker ({one_line(exc)}): open "
                    f"files, locks and connections lazily in the worker. {HINT}") from None


def _epoch(loader: DataLoader) -> list[Any]:
    """One epoch's batches (at most MAX_BATCHES: a stream that never ends cannot hang us)."""
    iterator = iter(loader)
    try:
        return list(itertools.islice(iterator, MAX_BATCHES))
    finally:  # a worker that failed leaves the others running until the iterator is collected
        stop_workers(iterator)


@checker
def check_spawn_safe(make_loader: Callable[[], DataLoader]) -> str:
    """Return a confirmation if one epoch of ``make_loader()`` with workers started by spawn
    yields the batches of ``num_workers=0``; raise Wrong with the first problem found."""
    loader = make_loader()
    if not isinstance(loader, DataLoader):
        raise Wrong(f"make_loader() must return a DataLoader, got {type(loader).__name__}.")
    if loader.num_workers < 1:
        raise Wrong("make_loader() returns a loader with num_workers=0: nothing is sent to a "
                    "worker, so nothing is tested; use num_workers >= 1.")
    parts = {"the Dataset": loader.dataset, "collate_fn": loader.collate_fn,
             "worker_init_fn": loader.worker_init_fn}
    for what, obj in parts.items():
        _require_picklable(what, obj)
    expected = _epoch(rebuild(make_loader(), num_workers=0, multiprocessing_context=None, timeout=0))
    workers = min(loader.num_workers, MAX_WORKERS)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="This DataLoader will create")
        spawned = rebuild(loader, num_workers=workers, multiprocessing_context="spawn",
                          timeout=TIMEOUT_S, persistent_workers=False)
    try:
        batches = _epoch(spawned)
    except RuntimeError as exc:
        if not any(what in str(exc) for what in ("exited unexpectedly", "by signal", "timed out")):
            raise
        raise Wrong(f"a spawned worker died or stalled ({one_line(exc)}): run the loader once "
                    f"with multiprocessing_context='spawn' to read the worker's own error. "
                    f"{HINT}") from None
    if len(batches) != len(expected):
        raise Wrong(f"with spawned workers the loader yields {len(batches)} batches, with "
                    f"num_workers=0 {len(expected)}. {HINT}")
    for k, (batch, reference) in enumerate(zip(batches, expected, strict=True)):
        if not same_batch(batch, reference):
            raise Wrong(f"batch {k} from spawned workers differs from batch {k} with "
                        f"num_workers=0: a spawned worker imports your modules afresh, so "
                        f"state set after the import (a module variable changed in the "
                        f"notebook, an unseeded random draw, a shuffle without a seeded "
                        f"generator) is not the same there; keep it in the Dataset. {HINT}")
    return (f"{len(batches)} batches from {workers} spawned worker(s), the same as with "
            f"num_workers=0: everything a worker receives pickles by an importable name")
