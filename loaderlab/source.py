"""Quoting torch's source in a notebook: the lines of a function that a lesson reads (07)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any


def source_lines(function: Callable[..., Any], contains: str | Sequence[str]) -> list[str]:
    """Return the lines of ``function``'s source code that contain any of ``contains``
    (indentation kept relative to the shallowest line returned)."""
    if not callable(function):
        raise TypeError(f"function must be callable, got {type(function).__name__}")
    needles = [contains] if isinstance(contains, str) else list(contains)
    if not needles or not all(isinstance(n, str) and n for n in needles):
        raise ValueError("contains must be a non-empty string or a list of them")
    lines = [line for line in inspect.getsource(function).splitlines() if any(n in line for n in needles)]
    indent = min((len(line) - len(line.lstrip()) for line in lines), default=0)
    return [line[indent:] for line in lines]
