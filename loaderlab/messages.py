"""One-sentence messages from exceptions, shared by the lab checkers and the doctor."""

from __future__ import annotations


def one_line(exc: BaseException) -> str:
    """Return ``Type: message`` for an exception, on one line; for an error re-raised from a
    DataLoader worker (its message embeds the worker's traceback), the original's last line."""
    text = str(exc).strip()
    if "Original Traceback" in text:
        return [line for line in text.splitlines() if line.strip()][-1].strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
