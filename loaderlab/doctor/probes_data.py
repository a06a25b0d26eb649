"""Probes of the data itself: pickling and open handles, one collated batch, large containers."""

from __future__ import annotations

import io
import itertools
import os
import pickle
import shutil
import socket
import sys
from typing import Any

import numpy as np

from loaderlab.doctor.probe_base import ProbeBase, fields_of, tensors_in
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


class DataProbes(ProbeBase):
    """pickling, collate, containers."""

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
        self.figures["pickling"] = {"pickled_mb": round(sizes.get("dataset", 0) / MB, 3),
                                    "failed": sorted(failed)}
        opened = []
        for name, value in fields_of(loader.dataset):
            if isinstance(value, io.IOBase) and not value.closed:
                opened.append(f"file {name} ({getattr(value, 'name', '?')})")
            elif isinstance(value, socket.socket) and value.fileno() >= 0:
                opened.append(f"socket {name}")
        if opened:
            self.add("dataset.open_file", None if loader.num_workers else "warning", names=", ".join(opened))
        if failed:
            self.workers_ok = not (loader.num_workers and self.method in ("spawn", "forkserver"))
            when = "workers started with spawn (macOS, Windows) or forkserver will fail"
            if not self.workers_ok:
                when = f"this loader starts its workers with {self.method}, so iter(loader) fails"
            what = ", ".join(f"{k} ({v})" for k, v in failed.items())
            self.add("pickle.fails", "warning" if self.workers_ok else None, what=what, when=when,
                     failed=sorted(failed))
        if in_main:
            self.add("pickle.main_module", names=", ".join(sorted(in_main)), classes=sorted(in_main))

    # -- one batch: can it be collated, and does it fit /dev/shm ------------------------------
    def collate(self) -> None:
        loader, ds, bs = self.loader, self.dataset, self.loader.batch_size
        if self.iterable:
            samples = list(itertools.islice(iter(ds), min(bs, 16)))
        else:
            m = min(self.n, bs, 16)
            samples = [ds[(j * self.n) // m] for j in range(m)]
        try:
            batch = loader.collate_fn(samples)
        except Exception as exc:
            shapes = sorted({tuple(t.shape) for s in samples for t in tensors_in(s)[:1]})
            if len(shapes) < 2:
                raise
            self.batches_ok = False
            self.add("collate.variable_length", count=len(samples), shapes=", ".join(map(str, shapes[:4])),
                     error=one_line(exc)[:80])
            return
        batch_mb = sum(t.nbytes for t in tensors_in(batch)) / MB * bs / max(1, len(samples))
        workers, prefetch = loader.num_workers, loader.prefetch_factor or 2
        shm = self.shm_bytes
        if shm is None and os.path.isdir("/dev/shm"):
            shm = shutil.disk_usage("/dev/shm").free
        need_mb = batch_mb * prefetch * workers
        self.figures["collate"] = {"samples": len(samples), "batch_mb": round(batch_mb, 2), "shm_need_mb":
                                   round(need_mb, 1), "shm_mb": None if shm is None else round(shm / MB, 1)}
        if shm is not None and workers and need_mb * MB > shm:
            self.add("memory.shm_too_small", batch_mb=round(batch_mb, 1), workers=workers, prefetch=prefetch,
                     need_mb=round(need_mb), shm_mb=round(shm / MB))

    # -- large Python containers (attributes only, no fetch) ------------------------------------
    def containers(self) -> None:
        found = {name: (len(value), mb) for name, value in fields_of(self.loader.dataset)
                 if (mb := _container_mb(value)) is not None}
        self.figures["containers"] = {k: {"items": n, "mb": round(mb, 1)} for k, (n, mb) in found.items()}
        for name, (n, mb) in found.items():
            self.add("memory.python_container", "warning" if self.loader.num_workers else "info",
                     name=name, items=n, mb=round(mb, 1))

