"""Copy-on-write instruments (notebook 06; 12 uses ``list_size_mb``): the memory a list of str
occupies, the pages a garbage collection would write, and the one-line error for no fork.

The lesson's Datasets (row lengths, packed rows, the unpickling probe) are written by notebook
06's ``%%writefile lesson06_rows*.py`` cells.
"""

from __future__ import annotations

import gc
import mmap
import sys

from loaderlab.units import MB

_GC_HEAD_BYTES = 16  # sizeof(PyGC_Head) on 64-bit CPython: two pointers just before the object


class NoForkHere(RuntimeError):
    """Raised where a measurement asks for fork on a platform that has none (Windows). In
    Jupyter it shows as its one sentence (IPython prints what ``_render_traceback_`` returns)."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def list_bytes(rows: list) -> int:
    """Return the bytes a non-empty list occupies: its pointer array plus every object it holds
    (``sys.getsizeof`` each: what CPython allocated, the same on every run)."""
    if not isinstance(rows, list) or not rows:
        raise TypeError("rows must be a non-empty list")
    return sys.getsizeof(rows) + sum(sys.getsizeof(row) for row in rows)


def list_size_mb(rows: list[str]) -> float:
    """Return the memory (MB) a list of str occupies: its pointer array plus every string object.

    Sizes come from ``sys.getsizeof`` (what CPython allocated for each object, before the
    allocator rounds it up), so the figure is the same on every run.
    """
    if not isinstance(rows, list) or not rows or not isinstance(rows[0], str):
        raise TypeError("rows must be a non-empty list of str")
    return list_bytes(rows) / MB


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
