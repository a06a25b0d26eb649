"""Argument checks shared by the package's public functions: each returns the value it
checked or raises TypeError / ValueError with one sentence naming the argument."""

from __future__ import annotations

from typing import Any

from torch.utils.data import DataLoader


def require_loader(loader: Any, name: str = "loader") -> DataLoader:
    """Return ``loader`` if it is a DataLoader, else raise a TypeError naming the argument."""
    if not isinstance(loader, DataLoader):
        raise TypeError(f"{name} must be a torch.utils.data.DataLoader, got {type(loader).__name__}")
    return loader


def require_positive(value: Any, name: str, allow_none: bool = False, integer: bool = True) -> Any:
    """Return ``value`` if it is a positive number (or None when allowed), else raise."""
    if value is None and allow_none:
        return value
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        kind = "an int" if integer else "a number"
        raise TypeError(f"{name} must be {kind}, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return value


def require_seconds(value: Any, name: str, positive: bool = False) -> float:
    """Return ``value`` as a float if it is a number of seconds >= 0 (> 0 when ``positive``),
    else raise TypeError / ValueError naming the argument."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if value < 0 or (positive and value == 0):
        raise ValueError(f"{name} must be {'>' if positive else '>='} 0 seconds, got {value}")
    return float(value)
