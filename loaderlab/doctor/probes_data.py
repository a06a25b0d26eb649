"""Probes of the dataset object itself (nothing fetched): pickling, open files and handles, large
containers."""

from __future__ import annotations

import io
import itertools
import pickle
import socket
import sys
from typing import Any

import numpy as np

from loaderlab.doctor.probe_base import ProbeBase, fields_of
from loaderlab.messages import one_line
from loaderlab.units import MB


class _MainModuleFinder(pickle.Pickler):
    """A pickler into a byte counter that notes every class or function defined in ``__main__``."""

    def __init__(self) -> None:
        self.out = io.BytesIO()
        super().__init__(self.out, protocol=pickle.DEFAULT_PROTOCOL)
        self.in_main: set[str] = set()

    def persistent_id(self, obj: Any) -> None:
        kind = obj if isinstance(obj, type) or callable(obj) and hasattr(obj, "__module__") else type(obj)
        if getattr(kind, "__module__", None) == "__main__":
            self.in_main.add(getattr(kind, "__qualname__", type(kind).__qualname__))


def _container_mb(value: Any) -> float | None:
    """Return the estimated size (MB) of a Python container of 10,000+ objects, else None."""
    if isinstance(value, np.ndarray):
        value = value.reshape(-1) if value.dtype == object else ()
    if not isinstance(value, (list, tuple, dict, set, np.ndarray)) or len(value) < 10_000:
        return None
    first = list(itertools.islice(value.items() if isinstance(value, dict) else value, 64))
    each = [sum(map(sys.getsizeof, x)) if isinstance(value, dict) else sys.getsizeof(x) for x in first]
    mb = (sys.getsizeof(value) + len(value) * (sum(each) / 64)) / MB
    return mb if mb >= 4 else None


def open_handle(value: Any) -> str | None:
    """Return "an open h5py.File (path)" or "an open lmdb.Environment (path)" when ``value`` is one,
    else None; neither library need be installed (the type's module and name tell)."""
    kind, module = type(value).__name__, type(value).__module__ or ""
    try:
        if module.startswith("h5py") and kind in ("File", "Dataset", "Group") and bool(value.id.valid):
            return f"an open h5py.{kind} ({getattr(value.file, 'filename', '?')})"
        if module.startswith("lmdb") and kind == "Environment":
            return f"an open lmdb.Environment ({value.path()})"
    except Exception:  # noqa: BLE001 - a closed or odd handle is no finding
        return None
    return None


class DataProbes(ProbeBase):
    """pickling, containers."""

    # -- pickling and open files (the user's objects, read only) ----------------------------
    def pickling(self) -> None:
        loader, sizes, failed, in_main = self.loader, {}, {}, set()
        for name in ("dataset", "collate_fn", "worker_init_fn"):
            if getattr(loader, name) is None:
                continue
            finder = _MainModuleFinder()
            try:
                finder.dump(getattr(loader, name))
                sizes[name] = finder.out.tell()
            except Exception as exc:  # noqa: BLE001 - any pickling error is the finding
                failed[name] = one_line(exc)
            in_main |= finder.in_main
        self.figures["pickling"] = {
            "pickled_mb": round(sizes.get("dataset", 0) / MB, 3),
            "failed": sorted(failed),
        }
        opened, handles = [], []
        for name, value in fields_of(loader.dataset):
            if isinstance(value, io.IOBase) and not value.closed:
                opened.append(f"file {name} ({getattr(value, 'name', '?')})")
            elif isinstance(value, socket.socket) and value.fileno() >= 0:
                opened.append(f"socket {name}")
            elif (handle := open_handle(value)) is not None:
                handles.append(f"{handle} {name}")
        severity = None if loader.num_workers else "warning"
        if opened:
            self.add("dataset.open_file", severity, names=", ".join(opened))
        if handles:
            self.add("dataset.open_handle", severity, names=", ".join(handles))
        self.workers_ok = not (failed and loader.num_workers and self.method in ("spawn", "forkserver"))
        if (opened or handles) and "dataset" in failed:  # one root cause, one finding: the handle
            self.causes.append(failed.pop("dataset"))
        if failed:
            when = "workers started with spawn (macOS, Windows) or forkserver will fail"
            if not self.workers_ok:
                when = f"this loader starts its workers with {self.method}, so iter(loader) fails"
            what = ", ".join(f"{k} ({v})" for k, v in failed.items())
            self.add(
                "pickle.fails",
                "warning" if self.workers_ok else None,
                what=what,
                when=when,
                failed=sorted(failed),
            )
        if in_main:
            self.add("pickle.main_module", names=", ".join(sorted(in_main)), classes=sorted(in_main))

    # -- large Python containers (attributes only, no fetch) ------------------------------------
    def containers(self) -> None:
        found = {
            name: (len(value), mb)
            for name, value in fields_of(self.loader.dataset)
            if (mb := _container_mb(value)) is not None
        }
        self.figures["containers"] = {k: {"items": n, "mb": round(mb, 1)} for k, (n, mb) in found.items()}
        for name, (n, mb) in found.items():
            self.add(
                "memory.python_container",
                "warning" if self.loader.num_workers else "info",
                name=name,
                items=n,
                mb=round(mb, 1),
            )
