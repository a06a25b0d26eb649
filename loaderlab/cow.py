"""Copy-on-write memory in DataLoader workers: table layouts, a per-epoch memory probe, plots.

The Dataset classes and the ``worker_init_fn`` live in the package (not in notebook cells) so
that workers started with ``spawn`` or ``forkserver`` can unpickle them.
"""

from __future__ import annotations

import gc
import mmap
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from loaderlab.datasets import MetadataDataset
from loaderlab.loaders import require_positive

MB = 1024 * 1024
_GC_HEAD_BYTES = 16  # sizeof(PyGC_Head) on 64-bit CPython: two pointers just before the object


class NoForkHere(RuntimeError):
    """Raised where a measurement asks for fork on a platform that has none (Windows). In
    Jupyter it shows as its one sentence (IPython prints what ``_render_traceback_`` returns)."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def list_size_mb(rows: list[str]) -> float:
    """Return the memory (MB) a list of str occupies: its pointer array plus every string object.

    Sizes come from ``sys.getsizeof`` (what CPython allocated for each object, before the
    allocator rounds it up), so the figure is the same on every run.
    """
    if not isinstance(rows, list) or not rows or not isinstance(rows[0], str):
        raise TypeError("rows must be a non-empty list of str")
    return (sys.getsizeof(rows) + sum(sys.getsizeof(row) for row in rows)) / MB


def pack_rows(rows: list[str], backend: str = "numpy") -> tuple[Any, Any]:
    """Return ``(buffer, offsets)``: all rows' UTF-8 bytes in one uint8 buffer, and int64
    offsets such that row ``i`` is ``buffer[offsets[i]:offsets[i + 1]]``.

    ``backend`` is ``"numpy"`` (NumPy arrays) or ``"torch"`` (tensors). Two objects hold the
    whole table, whatever its length, and rows may have any length (no padding).
    """
    if backend not in ("numpy", "torch"):
        raise ValueError(f"backend must be 'numpy' or 'torch', got {backend!r}")
    if not isinstance(rows, list) or not rows or not isinstance(rows[0], str):
        raise TypeError("rows must be a non-empty list of str")
    joined = "".join(rows)
    if joined.isascii():  # one byte per character: lengths in characters are lengths in bytes
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        data = joined.encode()
    else:
        encoded = [row.encode() for row in rows]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        data = b"".join(encoded)
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    buffer = np.frombuffer(data, dtype=np.uint8).copy()
    if backend == "torch":
        return torch.from_numpy(buffer), torch.from_numpy(offsets)
    return buffer, offsets


class RowLengths(MetadataDataset):
    """``MetadataDataset`` with a batched fetch: returns row lengths, reading rows read-only.

    ``__getitems__`` (which the DataLoader calls with a whole batch of indices) reads each row
    exactly as ``__getitem__`` does but returns plain ints, which ``default_collate`` turns
    into one LongTensor: an epoch over 10⁵ rows takes a fraction of a second.
    """

    def __getitems__(self, indices: Sequence[int]) -> list[int]:
        rows = self.rows
        return [len(rows[i]) for i in indices]


class PackedRowLengths(Dataset):
    """Rows stored as one byte buffer plus offsets (see ``pack_rows``); returns row lengths.

    Reading a row slices the buffer: no per-row Python object exists, so no reference count
    inside the table is ever written. Works with NumPy arrays or torch tensors.
    """

    def __init__(self, buffer: np.ndarray | torch.Tensor, offsets: np.ndarray | torch.Tensor) -> None:
        if len(offsets) < 2:
            raise ValueError("offsets must hold at least 2 entries (one row)")
        if int(offsets[-1]) != len(buffer):
            raise ValueError(f"offsets end at {int(offsets[-1])} but buffer holds {len(buffer)} bytes")
        self.buffer, self.offsets = buffer, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def row(self, index: int) -> str:
        """Return row ``index`` decoded to str (a fresh object owned by the caller)."""
        start, end = int(self.offsets[index]), int(self.offsets[index + 1])
        chunk = self.buffer[start:end]
        raw = chunk.numpy().tobytes() if isinstance(chunk, torch.Tensor) else chunk.tobytes()
        return raw.decode()

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor(len(self.row(index)))

    def __getitems__(self, indices: Sequence[int]) -> list[int]:
        return [len(self.row(i)) for i in indices]


def _uss_mb() -> float:
    import psutil

    return psutil.Process().memory_full_info().uss / MB


class _UssNow:
    """Pickles to "read this process's USS": unpickling it returns a float (MB), not itself."""

    def __reduce__(self) -> tuple[Any, tuple]:
        return (_uss_mb, ())


def _rebuild_probe(num_items: int, names: list[str], *readings_and_parts: Any) -> UnpickleCost:
    # readings_and_parts = (uss0, part1, uss1, part2, uss2, ...): each USS reading was taken
    # by the unpickler right after the part before it was rebuilt.
    readings = readings_and_parts[0::2]
    parts = readings_and_parts[1::2]
    probe = UnpickleCost.__new__(UnpickleCost)
    probe.num_items, probe.parts = num_items, dict(zip(names, parts, strict=True))
    probe.cost_mb = [after - before for before, after in zip(readings[:-1], readings[1:], strict=True)]
    return probe


class UnpickleCost(Dataset):
    """A probe Dataset: each item is a FloatTensor of how many MB this process's USS grew while
    each of ``parts`` was unpickled into it (0 in the process that built it).

    Under ``spawn`` or ``forkserver`` every worker receives the Dataset pickled; with
    ``batch_size=1`` and ``num_items == num_workers`` each worker returns its own figures.
    Unpickling reads the USS (Linux/macOS, via psutil) before and after each part.
    """

    def __init__(self, parts: dict[str, Any], num_items: int = 2) -> None:
        if not isinstance(parts, dict) or not parts:
            raise TypeError("parts must be a non-empty dict of name -> object")
        self.num_items = require_positive(num_items, "num_items")
        self.parts = parts
        self.cost_mb = [0.0] * len(parts)

    def __len__(self) -> int:
        return self.num_items

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor(self.cost_mb, dtype=torch.float32)

    def __reduce__(self) -> tuple[Any, tuple]:
        interleaved: list[Any] = [_UssNow()]
        for part in self.parts.values():
            interleaved += [part, _UssNow()]
        return (_rebuild_probe, (self.num_items, list(self.parts), *interleaved))


def tracked_pages() -> tuple[int, float]:
    """Return ``(objects, mb)``: how many objects the garbage collector tracks in this process,
    and the size (MB) of the distinct memory pages that hold their GC headers.

    A full collection writes into every one of those headers (``update_refs`` in
    ``Modules/gcmodule.c``), so a forked worker that collects copies about ``mb`` of pages.
    Objects moved out of the collector's reach by ``gc.freeze()`` are not counted (nor written).
    """
    objects = gc.get_objects()
    pages = {(id(obj) - _GC_HEAD_BYTES) // mmap.PAGESIZE for obj in objects}
    return len(objects), len(pages) * mmap.PAGESIZE / MB


