"""Checker for lab 12: the workers of ``make_loader()`` started by ``spawn`` must deliver the batches of
``num_workers=0``. What a worker receives is pickled first, by a pickler that names the first lambda,
local function, or class or function of the notebook (``__main__``: a spawned worker cannot import it)."""

from __future__ import annotations

import pickle
import types
import warnings
from collections.abc import Callable
from typing import Any

from torch.utils.data import DataLoader

from loaderlab.checks.report import Wrong, as_loader, bounded, checker, compare, epoch, one_line
from loaderlab.loaders import rebuild

HINT = "Hint: notebook 12, section 3 'What must be picklable'."
# batch {0} differs: why a spawned worker's batch is not the main process's
DIFFERS = (
    "batch {0} from spawned workers differs from batch {0} with num_workers=0: a spawned "
    "worker imports your modules afresh, so state set after the import (a module variable "
    "changed in the notebook, an unseeded random draw, a shuffle without a seeded generator) "
    "is not the same there; keep it in the Dataset. " + HINT
)
MAX_WORKERS = 2
MAX_BATCHES = 1000
TIMEOUT_S = 60.0  # per batch: a spawned worker imports torch first (seconds on a busy machine)
BOUND_S = 60.0  # the epoch without workers, run in this process


class _FindUnsafe(pickle.Pickler):
    """Pickles like a worker's arguments, but raises Wrong at the first object pickled by a name
    that a spawned worker cannot import."""

    def __init__(self, what: str, top: Any) -> None:
        super().__init__(types.SimpleNamespace(write=len), protocol=pickle.HIGHEST_PROTOCOL)  # keeps nothing
        self.what, self.top = what, top

    def reducer_override(self, obj: Any) -> Any:
        target = obj if isinstance(obj, (types.FunctionType, type)) else type(obj)
        name = getattr(target, "__qualname__", "?")
        verb = "is" if target is self.top else "is a" if target is type(self.top) else "uses"
        if name == "<lambda>" or name.endswith(".<lambda>"):
            why = (
                f"{'uses a' if verb == 'uses' else 'is a'} lambda (`{name}`): pickle stores a function by "
                f"its importable name, which a lambda has not; use a def at module level in lab12.py"
            )
        elif "<locals>" in name:
            why = (
                f"{verb} `{name}`, defined inside a function: pickle stores it by its importable name, "
                f"which it has not; define it at module level in lab12.py (functools.partial binds "
                f"extra arguments)"
            )
        elif getattr(target, "__module__", None) == "__main__":
            why = (
                f"{verb} `{name}`, defined in the notebook (__main__): it pickles by name, but a spawned "
                f"worker cannot import the notebook and dies with AttributeError; write it in lab12.py "
                f"and import it from there"
            )
        else:
            return NotImplemented
        raise Wrong(f"{self.what} {why}. {HINT}")


@checker
def check_spawn_safe(make_loader: Callable[[], DataLoader]) -> str:
    """Return a confirmation if one epoch of ``make_loader()`` with workers started by spawn
    yields the batches of ``num_workers=0``; raise Wrong with the first problem found."""
    loader = as_loader(make_loader(), "make_loader()", HINT)
    if loader.num_workers < 1:
        raise Wrong(
            "make_loader() returns a loader with num_workers=0: nothing is sent to a "
            "worker, so nothing is tested; use num_workers >= 1."
        )
    for what, obj in (
        ("the Dataset", loader.dataset),
        ("collate_fn", loader.collate_fn),
        ("worker_init_fn", loader.worker_init_fn),
    ):
        try:
            _FindUnsafe(what, obj).dump(obj)
        except Wrong:
            raise
        except Exception as exc:  # noqa: BLE001 - any pickling error is the answer's
            raise Wrong(
                f"{what} cannot be pickled for a spawned worker ({one_line(exc)}): open "
                f"files, locks and connections lazily in the worker. {HINT}"
            ) from None
    reference = rebuild(make_loader(), num_workers=0, multiprocessing_context=None, timeout=0)
    overran = f"an epoch without workers took over {BOUND_S:g} s: does __getitem__ return? {HINT}"
    with bounded(BOUND_S, overran):
        expected = epoch(reference, MAX_BATCHES)
    workers = min(loader.num_workers, MAX_WORKERS)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="This DataLoader will create")
        spawned = rebuild(
            loader,
            num_workers=workers,
            multiprocessing_context="spawn",
            timeout=TIMEOUT_S,
            persistent_workers=False,
        )
    try:
        batches = epoch(spawned, MAX_BATCHES)
    except RuntimeError as exc:
        if not any(what in str(exc) for what in ("exited unexpectedly", "by signal", "timed out")):
            raise
        raise Wrong(
            f"a spawned worker died or stalled ({one_line(exc)}): run the loader once "
            f"with multiprocessing_context='spawn' to read the worker's own error. "
            f"{HINT}"
        ) from None
    compare(
        batches,
        expected,
        differ=DIFFERS.format,
        count=f"with spawned workers the loader yields {len(batches)} batches, with num_workers=0 "
        f"{len(expected)}. {HINT}",
    )
    return (
        f"{len(batches)} batches from {workers} spawned worker(s), the same as with "
        f"num_workers=0: everything a worker receives pickles by an importable name"
    )
