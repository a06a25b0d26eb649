"""What the doctor runs inside DataLoader workers: probe wrappers, sample fingerprints, timed passes,
and the copies of the user's objects that every probe works on.

The wrappers live in the package (not in the caller's module) so that workers started with
``spawn`` or ``forkserver`` can unpickle them. Attribute reads and writes on a wrapper go to the
wrapped dataset, so a ``worker_init_fn`` that sets ``get_worker_info().dataset.rng`` still
reaches the user's dataset.
"""

from __future__ import annotations

import copy
import hashlib
import io
import pickle
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from loaderlab.datasets import AttributeForwarding

_SCALARS = (int, float, str, bytes, bool, type(None), np.number, np.bool_)


def _feed(h: Any, obj: Any, depth: int = 0) -> None:
    if depth > 6:
        h.update(type(obj).__name__.encode())
        return
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
        if t.numel():
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(obj, np.ndarray):
        h.update(f"A{obj.dtype}{obj.shape}".encode())
        if obj.dtype == object:
            for item in obj.reshape(-1)[:4096]:
                _feed(h, item, depth + 1)
        else:
            h.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, _SCALARS):
        h.update(f"S{type(obj).__name__}{obj!r}".encode())
    elif isinstance(obj, Mapping):
        h.update(b"{")
        for key in sorted(obj, key=repr):
            _feed(h, key, depth + 1)
            _feed(h, obj[key], depth + 1)
        h.update(b"}")
    elif isinstance(obj, (list, tuple)):
        h.update(b"[")
        for item in obj:
            _feed(h, item, depth + 1)
        h.update(b"]")
    elif hasattr(obj, "tobytes"):  # PIL images and the like
        h.update(type(obj).__name__.encode())
        h.update(obj.tobytes())
    elif hasattr(obj, "__dict__"):  # plain objects: their fields (never a repr with an address)
        h.update(type(obj).__name__.encode())
        _feed(h, vars(obj), depth + 1)
    else:
        h.update(type(obj).__name__.encode())


def fingerprint(sample: Any) -> str:
    """Return a short hex digest of a sample's content (tensors and arrays byte for byte,
    containers recursively): equal samples give equal fingerprints in any process."""
    h = hashlib.blake2b(digest_size=12)
    _feed(h, sample)
    return h.hexdigest()


def state_of(dataset: Any) -> dict[str, str]:
    """Return the dataset's small attributes (numbers, strings, tensors of ≤ 64 values) as
    ``{name: fingerprint}``: what a worker's copy of the dataset holds right now."""
    state: dict[str, str] = {}
    for name, value in getattr(dataset, "__dict__", {}).items():
        small_tensor = isinstance(value, (torch.Tensor, np.ndarray)) and value.size is not None and (
            value.numel() if isinstance(value, torch.Tensor) else value.size
        ) <= 64
        if isinstance(value, _SCALARS) or small_tensor:
            state[name] = fingerprint(value)
    return state


def _worker_id() -> int:
    info = get_worker_info()
    return info.id if info is not None else -1


def identity(batch: Any) -> Any:
    """Return ``batch`` unchanged: the collate_fn of the probe loaders."""
    return batch


class ProbeDataset(AttributeForwarding, Dataset):
    """Wraps a map-style dataset; item ``i`` is ``(i, worker id, dataset[i] or its
    fingerprint, state_of(dataset) or None)`` (worker id -1 in the main process)."""

    def __init__(self, dataset: Dataset, with_state: bool = False, whole: bool = False) -> None:
        object.__setattr__(self, "_inner", dataset)
        object.__setattr__(self, "_with_state", bool(with_state))
        object.__setattr__(self, "_whole", bool(whole))

    def __len__(self) -> int:
        return len(self._inner)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> tuple[int, int, Any, dict[str, str] | None]:
        sample = self._inner[index]
        state = state_of(self._inner) if self._with_state else None
        return index, _worker_id(), sample if self._whole else fingerprint(sample), state


def leaves(sample: Any) -> list[Any]:
    """Return a sample's leaves in a fixed order: tensors and arrays as flat float64 NumPy
    arrays, other values as they are (containers are walked recursively)."""
    out: list[Any] = []

    def walk(obj: Any) -> None:
        if isinstance(obj, torch.Tensor):
            out.append(obj.detach().cpu().reshape(-1).double().numpy())
        elif isinstance(obj, np.ndarray) and obj.dtype != object:
            out.append(obj.reshape(-1).astype(np.float64))
        elif isinstance(obj, Mapping):
            for key in sorted(obj, key=repr):
                walk(obj[key])
        elif isinstance(obj, (list, tuple)):
            for item in obj:
                walk(item)
        else:
            out.append(fingerprint(obj))

    walk(sample)
    return out


def random_part(first: Any, second: Any) -> list[Any] | None:
    """Return the masks of the positions where two fetches of the same index differ (one mask
    per leaf), or None when the two samples do not have the same structure."""
    a, b = leaves(first), leaves(second)
    if len(a) != len(b):
        return None
    masks: list[Any] = []
    for x, y in zip(a, b, strict=True):
        if isinstance(x, np.ndarray) != isinstance(y, np.ndarray):
            return None
        if isinstance(x, np.ndarray):
            if x.shape != y.shape:
                return None
            masks.append(~((x == y) | (np.isnan(x) & np.isnan(y))))
        else:
            masks.append(x != y)
    return masks


def equal_positions(masks: list[Any], first: Any, second: Any) -> set[int] | None:
    """Return the random positions (flat, across all leaves) where two samples hold the same
    value, or None when they cannot be compared (different structure)."""
    a, b = leaves(first), leaves(second)
    if len(a) != len(b) or len(a) != len(masks):
        return None
    found: set[int] = set()
    offset = 0
    for mask, x, y in zip(masks, a, b, strict=True):
        if isinstance(x, np.ndarray):
            if not isinstance(y, np.ndarray) or x.shape != y.shape or x.shape != mask.shape:
                return None
            found.update((offset + np.flatnonzero(mask & (x == y))).tolist())
            offset += x.size
        else:
            if mask and x == y:
                found.add(offset)
            offset += 1
    return found
class ProbeIterable(AttributeForwarding, IterableDataset):
    """Wraps an IterableDataset; yields ``(worker id, fingerprint of item)`` for each item."""

    def __init__(self, dataset: IterableDataset) -> None:
        object.__setattr__(self, "_inner", dataset)

    def __iter__(self) -> Iterator[tuple[int, str]]:
        worker = _worker_id()
        for item in self._inner:
            yield worker, fingerprint(item)


def _share(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.share_memory_()


class _CopyPickler(pickle.Pickler):
    """Pickles like ``pickle.dumps`` but keeps shared-memory tensors shared in the copy (a
    dataset that hands epochs to its workers through one must behave the same on the copy)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, torch.Tensor) and obj.is_shared() and not obj.is_cuda:
            return _share, (obj.detach().clone(),)
        return NotImplemented


def copied(objects: Any) -> tuple[Any, str | None]:
    """Return ``(copy of objects, None)`` made by pickling them together (shared references stay
    shared, generators keep their state), by ``copy.deepcopy`` when pickling fails, or
    ``(None, reason)`` when neither works. Probes fetch samples from the copy only."""
    buffer = io.BytesIO()
    try:
        _CopyPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(objects)
        return pickle.loads(buffer.getvalue()), None
    except Exception as exc:  # noqa: BLE001 - fall back to deepcopy, then give the reason
        try:
            return copy.deepcopy(objects), None
        except Exception:  # noqa: BLE001
            return None, f"cannot be copied: {type(exc).__name__}: {exc}"
