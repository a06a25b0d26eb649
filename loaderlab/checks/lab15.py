"""Checker for lab 15: keep every batch of a worker loader without running out of descriptors.
Under Linux's ``file_descriptor`` strategy every tensor from a worker holds a descriptor while it
lives (notebook 15); the lab's experiment (``loaderlab.labs.lab15.keep_in_child``) keeps them
in a forked child with ``HEADROOM`` descriptors to spare, and this judges its report. Linux only:
elsewhere batches travel by name (``file_system``), which costs no descriptor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loaderlab.checks.report import Wrong, checker
from loaderlab.labs.lab15 import HEADROOM, N_BATCHES, keep_in_child

HINT = "Hint: notebook 15, sections 2 and 3, and its 'In your own code'"


@checker
def check_kept_batches(keep: Callable[[Any], Any]) -> str:
    """Return a confirmation if keeping ``keep(batch)`` for every batch of a 2-worker loader fits
    in a lowered descriptor limit, with the batches' values; raise Wrong otherwise (Linux only)."""
    try:
        report = keep_in_child(keep)
    except OSError as exc:
        raise Wrong(f"{exc}: run this lab on Linux (a Linux machine, container or WSL).") from None
    error, kept, holds = report["error"], report.get("kept", 0), report.get("holds")
    if error and "your code here" in error:
        raise NotImplementedError("your code here")
    if holds or (error and "Too many open files" in error):
        why = {
            "received": "you keep the received tensors themselves",
            "shared": "your copies share the received memory (a view, [:], detach() or .numpy() "
            "keeps the worker's segment alive)",
        }.get(holds or "", "what you keep holds them")
        raise Wrong(
            f"kept {kept} of {N_BATCHES} batches under a limit of {report.get('limit')} descriptors "
            f"({error.split('.')[0] if error else 'no error yet'}): every tensor from a worker holds "
            f"a file descriptor while it lives, and {why}; keep private copies (clone()) instead. "
            f"{HINT}"
        )
    if error:
        own = kept == 0 and "child" not in error and "within" not in error
        raise Wrong(
            f"your keep raised {error}. {HINT}"
            if own
            else f"the loop stopped after {kept} of {N_BATCHES} batches: {error}. {HINT}"
        )
    if report["wrong_at"] is not None:
        raise Wrong(
            f"what you kept of batch {report['wrong_at']} is not its (features, labels): return "
            f"both, with the received values, as tensors, arrays or lists. {HINT}"
        )
    return (
        f"all {N_BATCHES} batches kept, with their values, within {HEADROOM} descriptors of headroom "
        f"(2 workers, the file_descriptor strategy)"
    )
