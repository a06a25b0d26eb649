"""Lab 15's scaffolding: ``keep_in_child(keep)`` keeps ``keep(batch)`` for every batch of a
2-worker loader in a forked child with ``HEADROOM`` descriptors to spare, killed with its workers
after ``BOUND_S``, and reports what happened. Under Linux's ``file_descriptor`` strategy every
tensor from a worker holds a descriptor while it lives (notebook 15). The lab runs the
experiment; its checker (``loaderlab.checks.lab15``) judges the report."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

from loaderlab.messages import one_line
from loaderlab.processes import kill_tree

N_BATCHES, BATCH, DIM = 150, 4, 4
HEADROOM = 48  # descriptors the child may open beyond those it inherited: 2 per kept batch run out at ~20
BOUND_S, LOADER_TIMEOUT_S = 30.0, 5.0
FEATURES = torch.arange(N_BATCHES * BATCH * DIM, dtype=torch.float32).reshape(-1, DIM)
LABELS = torch.arange(N_BATCHES * BATCH) % 3


def _holds(item: Any, xb: torch.Tensor, yb: torch.Tensor) -> str | None:
    """Return how ``item`` keeps the received batch alive: 'received' (its tensors themselves),
    'shared' (views, detach() or .numpy() of them), or None (copies)."""
    parts = list(item) if isinstance(item, (tuple, list)) else [item]
    if any(p is xb or p is yb for p in parts):
        return "received"
    received = {xb.untyped_storage().data_ptr(), yb.untyped_storage().data_ptr()}
    shared = any(isinstance(p, torch.Tensor) and p.untyped_storage().data_ptr() in received
                 or isinstance(p, np.ndarray) and any(np.shares_memory(p, t.numpy()) for t in (xb, yb))
                 for p in parts)
    return "shared" if shared else None


def _kept_right(item: Any, k: int) -> bool:
    """Return True if ``item`` holds batch ``k``'s (features, labels), as tensors, arrays or lists."""
    rows = slice(k * BATCH, (k + 1) * BATCH)
    try:
        xb, yb = (torch.as_tensor(np.asarray(part)) for part in item)
        return torch.equal(xb.float(), FEATURES[rows]) and torch.equal(yb.long(), LABELS[rows])
    except (TypeError, ValueError, RuntimeError):
        return False


def _child(keep: Callable[[Any], Any], send: Any) -> None:
    import resource  # Unix only

    os.setpgrp()  # its workers join its group: the parent can kill them all at once
    torch.set_num_threads(1)
    torch.multiprocessing.set_sharing_strategy("file_descriptor")  # Linux's default, whatever the session set
    inherited = len(os.listdir("/dev/fd"))
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (inherited + HEADROOM, hard))
    loader = DataLoader(TensorDataset(FEATURES, LABELS), batch_size=BATCH, num_workers=2,
                        multiprocessing_context="fork", timeout=LOADER_TIMEOUT_S)
    kept: list[Any] = []
    report: dict[str, Any] = {"error": None, "holds": None, "limit": inherited + HEADROOM}
    try:
        for xb, yb in loader:
            kept.append(keep((xb, yb)))
            if len(kept) == 1:
                report["holds"] = _holds(kept[0], xb, yb)
    except Exception as exc:  # "Too many open files", a timeout, or keep's own error
        report["error"] = one_line(exc)
        exc.__traceback__ = None  # its frames hold the loader's iterator: its workers stop now
    wrong = [k for k, item in enumerate(kept) if not report["error"] and not _kept_right(item, k)]
    report.update(kept=len(kept), wrong_at=wrong[0] if wrong else None)
    del kept
    send.send(report)


def keep_in_child(keep: Callable[[Any], Any]) -> dict[str, Any]:
    """Return what a forked child reported after keeping ``keep(batch)`` for every batch of a
    2-worker loader under a lowered descriptor limit: kept (batches), error (one line or None),
    holds ('received', 'shared' or None), wrong_at (first batch with other values), limit."""
    if not sys.platform.startswith("linux"):
        raise OSError("this experiment runs on Linux only: macOS and Windows send batches by name, "
                      "which costs no descriptor")
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(keep, send))
    process.start()
    send.close()
    try:
        overran = {"error": f"did not finish within {BOUND_S:g} s"}
        report = receive.recv() if receive.poll(BOUND_S) else overran
    except EOFError:
        report = {"error": "the child process died without a report"}
    finally:
        process.join(5.0)
        if process.is_alive() and process.pid is not None:  # overran: kill it with its workers
            kill_tree(process.pid)
        process.join()
        receive.close()
    return report
