"""Start methods for DataLoader workers (notebook 12): start-up per epoch, what each worker
receives, what must be picklable, and the forkserver's preload list.

Everything a worker runs comes from the package (``loaderlab.datasets``, ``loaderlab.cow``)
so that ``spawn`` and ``forkserver`` workers can unpickle it.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import re
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from loaderlab.cow import UnpickleCost
from loaderlab.failures import consume
from loaderlab.loaders import require_loader, require_positive
from loaderlab.workers import epoch_startups

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _require_method(method: Any, name: str = "method") -> str:
    if not isinstance(method, str):
        raise TypeError(f"{name} must be a str, got {type(method).__name__}")
    available = multiprocessing.get_all_start_methods()
    if method not in available:
        raise ValueError(f"{name} must be one of {available} on this platform, got {method!r}")
    return method


def without_addresses(text: str) -> str:
    """Return ``text`` with memory addresses (`` at 0x7f...``) removed: they differ per run."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _ADDRESS.sub("", text)


def restart_forkserver(preload: Sequence[str] = ()) -> list[str]:
    """Return the forkserver's new preload list after stopping the running forkserver (if any).

    The forkserver is started once per process, on first use, and imports its preload
    modules only then; changing the list later has no effect on a running server. This stops
    it (``multiprocessing.forkserver._forkserver._stop``, a private CPython function, present
    in 3.8-3.14) so that the next ``forkserver`` worker starts a fresh server with ``preload``.
    """
    if isinstance(preload, str) or not all(isinstance(m, str) for m in preload):
        raise TypeError("preload must be a list of module names (str)")
    _require_method("forkserver")
    server = multiprocessing.forkserver._forkserver
    stop = getattr(server, "_stop", None)
    if stop is not None:
        stop()
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(preload))
    return list(server._preload_modules)


def startup_times(
    dataset: Dataset,
    method: str,
    epochs: int = 2,
    num_workers: int = 2,
    batch_size: int = 4,
    persistent_workers: bool = False,
) -> list[float]:
    """Return, per epoch, the seconds from ``iter(loader)`` to the first batch for a loader over
    ``dataset`` whose workers start with ``method`` (``multiprocessing_context=method``).

    Persistent workers are shut down at the end, so nothing outlives the call.
    """
    _require_method(method)
    require_positive(epochs, "epochs")
    require_positive(num_workers, "num_workers")
    require_positive(batch_size, "batch_size")
    if not isinstance(persistent_workers, bool):
        raise TypeError(f"persistent_workers must be a bool, got {type(persistent_workers).__name__}")
    loader = DataLoader(
        dataset, batch_size=batch_size, num_workers=num_workers, multiprocessing_context=method,
        persistent_workers=persistent_workers,
    )
    return epoch_startups(loader, epochs=epochs)


def start_error(loader: DataLoader) -> str | None:
    """Return the error (``"Type: message"``, no paths, pids or addresses) raised while
    iterating ``loader`` for one batch, or None if a batch arrived. Workers are shut down."""
    require_loader(loader)
    outcome = consume(loader, max_batches=1)
    return without_addresses(outcome.error) if outcome.error else None


def unpickle_costs(parts: dict[str, Any], methods: Sequence[str]) -> dict[str, dict[str, float]]:
    """Return ``{method: {part: MB}}``: how much one worker's private memory (USS) grew while
    it unpickled each part of a Dataset, for workers started with each method.

    Uses ``loaderlab.cow.UnpickleCost``. Under ``fork`` nothing is unpickled (the worker
    inherits the parent's pages), so every figure is 0 by construction.
    """
    if not isinstance(parts, dict) or not parts:
        raise TypeError("parts must be a non-empty dict of name -> object")
    if isinstance(methods, str) or not methods:
        raise TypeError("methods must be a non-empty list of start method names")
    probe = UnpickleCost(parts, num_items=1)
    costs = {}
    for method in methods:
        _require_method(method, "methods[...]")
        loader = DataLoader(probe, batch_size=1, num_workers=1, multiprocessing_context=method)
        (batch,) = list(loader)
        costs[method] = dict(zip(parts, batch[0].tolist(), strict=True))
    return costs


def shares_storage(tensor: torch.Tensor) -> bool:
    """Return True if ``tensor``'s storage lives in shared memory (``Tensor.is_shared``)."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor must be a tensor, got {type(tensor).__name__}")
    return bool(tensor.is_shared())


_UNGUARDED_SCRIPT = """
from torch.utils.data import DataLoader
from loaderlab.datasets import LatencyDataset
loader = DataLoader(LatencyDataset(n=8, latency_s=0.0), batch_size=4, num_workers=1,
                    multiprocessing_context={method!r})
print("batches:", len(list(loader)))
"""


def unguarded_script(method: str, timeout_s: float = 20.0) -> dict[str, Any]:
    """Return what happens when a script that builds and iterates a 1-worker DataLoader at
    module level (no ``if __name__ == "__main__":`` guard) runs with workers started by
    ``method``: ``{"ok": bool, "bootstrapping_error": bool, "returncode": int | None}``.

    Under ``spawn`` and ``forkserver`` a worker re-imports the script as ``__mp_main__`` and
    hits the loader again, before bootstrapping ended: multiprocessing refuses with "An attempt
    has been made to start a new process before the current process has finished its
    bootstrapping phase". The script's loader has no ``timeout=``: it notices the dead worker
    (torch checks every 5 s) only after the worker has printed its error, so the message is
    always there. The child gets ``timeout_s`` seconds (killed after that).
    """
    _require_method(method)
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or timeout_s <= 0:
        raise ValueError(f"timeout_s must be a number of seconds > 0, got {timeout_s!r}")
    import os
    import tempfile

    with tempfile.TemporaryDirectory(prefix="loaderlab-script-") as folder:
        path = os.path.join(folder, "train.py")
        with open(path, "w") as handle:
            handle.write(_UNGUARDED_SCRIPT.format(method=method))
        try:
            done = subprocess.run(
                [sys.executable, path], capture_output=True, text=True, timeout=timeout_s,
                cwd=folder,
            )
        except subprocess.TimeoutExpired as exc:
            err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
            return {"ok": False, "bootstrapping_error": "bootstrapping phase" in err, "returncode": None}
    return {
        "ok": done.returncode == 0 and "batches: 2" in done.stdout,
        "bootstrapping_error": "bootstrapping phase" in done.stderr,
        "returncode": done.returncode,
    }
