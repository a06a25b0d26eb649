"""How every lab checker reports: one line, never a traceback."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import Any

PASS, FAIL, PENDING = "✅", "❌", "⏳"


class Wrong(Exception):
    """Raised inside a checker body: the message is the one sentence (plus hint) shown to the student."""


class _CandidateFailed(Exception):
    pass


def one_line(exc: BaseException) -> str:
    """Return ``Type: message`` for an exception, on one line.

    For an error re-raised from a DataLoader worker, whose message embeds the worker's whole
    traceback, the original exception's own last line is used.
    """
    text = str(exc).strip()
    if "Original Traceback" in text:
        lines = [line for line in text.splitlines() if line.strip()]
        return lines[-1].strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _is_stub(exc: BaseException) -> bool:
    if isinstance(exc, NotImplementedError):
        return True
    # A stub raising inside a DataLoader worker comes back as NotImplementedError too, but be
    # lenient with wrappers that lost the type.
    return "NotImplementedError" in str(exc) and "your code here" in str(exc)


def _release_workers() -> None:
    # A loader that failed mid-epoch keeps its worker processes until its iterator is garbage
    # collected; the traceback of the failure holds the iterator, so collect now.
    gc.collect()


def checker(body: Callable[..., str]) -> Callable[..., bool]:
    """Turn ``body(candidate, ...) -> confirmation`` into a checker that prints one line.

    ``body`` raises ``Wrong("what is wrong. Hint: ...")`` when the candidate misbehaves; any
    other exception is the candidate's (reported as ``❌`` with its one-line summary), and
    ``NotImplementedError`` (the lab stub) is reported as not attempted.
    """

    @functools.wraps(body)
    def run(candidate: Any = None, *args: Any, **kwargs: Any) -> bool:
        if candidate is None:
            print(f"{PENDING} not attempted yet")
            return False
        try:
            confirmation = body(candidate, *args, **kwargs)
        except Wrong as wrong:
            _release_workers()
            print(f"{FAIL} {wrong}")
            return False
        except Exception as exc:  # the candidate's own error: one line, no traceback
            summary = one_line(exc)
            stub = _is_stub(exc)
            del exc
            _release_workers()
            print(f"{PENDING} not attempted yet" if stub else f"{FAIL} your code raised {summary}")
            return False
        print(f"{PASS} {confirmation}")
        return True

    return run
