"""Probes that fetch samples in this process: samples that raise or are None (located by index), a
``__len__`` larger than the data, and one collated batch (types the default collate_fn refuses,
float64 from NumPy or Python floats, shapes that differ, its size against /dev/shm)."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from loaderlab.doctor.probe_base import ProbeBase, tensors_in
from loaderlab.messages import one_line
from loaderlab.units import MB

MOST_FETCHES = 20_000  # the samples probe reads at most this many samples (and at most ~1 s of them)
# default_collate's TypeError ends "found <class 'X'>", or "found object" for a NumPy object array
FOUND = re.compile(r"found (?:<class '([^']+)'>|(\S+))")


def leaves(obj: Any, path: str = "sample", depth: int = 0) -> list[tuple[str, Any]]:
    """Return ``(path, value)`` for each leaf of a sample (containers walked, 6 levels at most)."""
    if depth < 6 and isinstance(obj, Mapping):
        return [leaf for k, v in obj.items() for leaf in leaves(v, f"{path}[{k!r}]", depth + 1)]
    if depth < 6 and isinstance(obj, (list, tuple)) and not isinstance(obj, str):
        return [leaf for i, v in enumerate(obj) for leaf in leaves(v, f"{path}[{i}]", depth + 1)]
    return [(path, obj)]


def conversion(found: str) -> str:
    """Return the fix for a type the default collate_fn cannot batch."""
    if found.startswith("PIL."):
        return (
            "Convert each image to a tensor in __getitem__: transforms.PILToTensor() (torchvision), or "
            "torch.from_numpy(np.asarray(image)).permute(2, 0, 1) (uint8, channels first)."
        )
    if found == "object":
        return (
            "Store numbers in a numeric dtype (a NumPy array of dtype object holds Python objects), or "
            "return a list and batch it in your own collate_fn."
        )
    return (
        f"Return tensors, NumPy arrays, numbers, str, or dicts, lists and tuples of them from "
        f"__getitem__ "
        f"(convert the {found} there), or pass a collate_fn that batches it."
    )


def implicit_float64(samples: list[Any]) -> str | None:
    """Return where float64 comes from when the samples hold NumPy float64 arrays or Python floats
    (the defaults that silently make float64 batches), else None."""
    found = set()
    for sample in samples:
        for _path, value in leaves(sample):
            if isinstance(value, np.ndarray) and value.dtype == np.float64:
                found.add("NumPy float64 arrays")
            elif isinstance(value, float):
                found.add("Python floats")
    return " and ".join(sorted(found)) or None


class SampleProbes(ProbeBase):
    """samples, collate, and ``locate``: the index of a sample that made another probe fail."""

    def samples(self) -> None:
        if self.iterable:
            self._stream_items()
            return
        n, ds = int(self.n or 0), self.dataset
        first = self.spread()
        spread = set(first)
        order = itertools.chain(first, (i for i in range(n) if i not in spread))
        deadline = time.perf_counter() + max(0.2, min(1.0, self.left() / 15))
        failed: dict[int, BaseException] = {}
        nones: list[int] = []
        checked = 0
        for i in order:
            if checked >= len(first) and (time.perf_counter() > deadline or checked >= MOST_FETCHES):
                break
            checked += 1
            try:
                if ds[i] is None:
                    nones.append(i)
            except Exception as exc:  # noqa: BLE001 - a sample that raises is the finding
                failed[i] = exc
        self.figures["samples"] = {
            "fetched": checked,
            "whole_dataset": checked == n,
            "raised": len(failed),
            "none": len(nones),
        }
        self.bad |= set(failed) | set(nones)
        tail = failed.get(n - 1)
        if isinstance(tail, IndexError):
            first_bad = self._first_index_error(n, failed)
            self.causes.append(one_line(tail))
            self.add("dataset.len_too_long", length=n, first=first_bad, last=n - 1, error=one_line(tail))
            failed = {i: e for i, e in failed.items() if not (i >= first_bad and isinstance(e, IndexError))}
            self.bad |= set(range(first_bad, n))
        by_type: dict[str, list[int]] = {}
        for i, raised in sorted(failed.items()):
            by_type.setdefault(type(raised).__name__, []).append(i)
        for indices in by_type.values():
            error = one_line(failed[indices[0]])
            self.causes.append(error)
            same = f"; indices {', '.join(map(str, indices[:6]))}{' ...' if len(indices) > 6 else ''}"
            self.add(
                "sample.raises",
                where=f"sample {indices[0]}",
                index=indices[0],
                error=error,
                failed=len(indices),
                checked=checked,
                same=same if len(indices) > 1 else "",
                indices=indices[:20],
            )
        if nones:
            self.causes.append("NoneType")
            self.add(
                "sample.none",
                where=f"sample {nones[0]}",
                index=nones[0],
                count=len(nones),
                checked=checked,
                indices=nones[:20],
            )

    def _first_index_error(self, n: int, failed: dict[int, BaseException]) -> int:
        """Return the first index that raises IndexError (bisected: indices past the data all do)."""
        hi = min(i for i, e in failed.items() if isinstance(e, IndexError))
        lo = -1  # below hi, the bisection finds the first index that raises IndexError
        while hi - lo > 1:
            mid = (lo + hi) // 2
            try:
                self.dataset[mid]
                lo = mid
            except IndexError:
                hi = mid
            except Exception:  # noqa: BLE001 - another error: count it readable, the bisection goes on
                lo = mid
        return hi

    def _stream_items(self) -> None:
        """A stream: read up to 256 items here; an item that raises ends the stream, as in training."""
        checked, nones, deadline = 0, [], time.perf_counter() + max(0.3, min(2.0, self.left() / 8))
        try:
            for checked, item in enumerate(self.dataset, 1):
                if item is None:
                    nones.append(checked - 1)
                if checked >= 256 or time.perf_counter() > deadline:
                    break
        except Exception as exc:  # noqa: BLE001 - the item that raises is the finding
            error = one_line(exc)
            self.causes.append(error)
            self.add(
                "sample.raises",
                where=f"item {checked} of the stream",
                index=checked,
                error=error,
                failed=1,
                checked=checked + 1,
                same="",
                indices=[checked],
            )
        self.figures["samples"] = {"fetched": checked, "none": len(nones)}
        if nones:
            self.causes.append("NoneType")
            self.add(
                "sample.none",
                where=f"item {nones[0]} of the stream",
                index=nones[0],
                count=len(nones),
                checked=checked,
                indices=nones[:20],
            )

    def locate(self, exc: BaseException) -> bool:
        """After a probe failed with ``exc``: look in this process for the sample that raises it
        (the indices the samples probe did not reach, while time is left); True when found and
        reported (or already reported: one finding per root cause)."""
        error = one_line(exc)
        if any(cause in str(exc) or cause in error for cause in self.causes):
            return True
        if self.iterable or not self.n or self.key_problem or self.dataset is None:
            return False
        deadline = time.perf_counter() + max(0.5, min(3.0, self.left()))
        start = self.figures.get("samples", {}).get("fetched", 0)
        for i in range(self.n):
            if i in self.bad or (i < start and "samples" in self.figures):
                continue
            if time.perf_counter() > deadline:
                return False
            try:
                self.dataset[i]
            except Exception as found:  # noqa: BLE001
                if type(found).__name__ in error or one_line(found) in str(exc):
                    self.bad.add(i)
                    self.causes.append(one_line(found))
                    self.add(
                        "sample.raises",
                        where=f"sample {i}",
                        index=i,
                        error=one_line(found),
                        failed=1,
                        checked=i + 1,
                        same="",
                        indices=[i],
                    )
                    return True
        return False

    # -- one batch: can it be collated, and does it fit /dev/shm ------------------------------
    def collate(self) -> None:
        loader, ds, bs = self.loader, self.dataset, self.loader.batch_size
        if self.iterable:
            samples = [s for s in itertools.islice(iter(ds), min(bs, 16)) if s is not None]
        else:
            samples = [ds[i] for i in self.spread(min(bs, 16))]
        if not samples:
            self.figures["collate"] = {"samples": 0}
            return
        try:
            batch = loader.collate_fn(samples)
        except Exception as exc:
            self.batches_ok = False
            self._collate_failed(samples, exc)
            return
        source = implicit_float64(samples)
        doubles = [f"{tuple(t.shape)}" for t in tensors_in(batch) if t.dtype == torch.float64]
        if doubles and source:
            self.add("batch.float64", fields=", ".join(doubles[:4]), source=source)
        batch_mb = sum(t.nbytes for t in tensors_in(batch)) / MB * bs / max(1, len(samples))
        workers, prefetch = loader.num_workers, loader.prefetch_factor or 2
        shm = self.shm_bytes
        if shm is None and os.path.isdir("/dev/shm"):
            shm = shutil.disk_usage("/dev/shm").free
        need_mb = batch_mb * prefetch * workers
        self.figures["collate"] = {
            "samples": len(samples),
            "batch_mb": round(batch_mb, 2),
            "shm_need_mb": round(need_mb, 1),
            "shm_mb": None if shm is None else round(shm / MB, 1),
            "float64": doubles,
        }
        if shm is not None and workers and need_mb * MB > shm:
            self.add(
                "memory.shm_too_small",
                batch_mb=round(batch_mb, 1),
                workers=workers,
                prefetch=prefetch,
                need_mb=round(need_mb),
                shm_mb=round(shm / MB),
            )

    def _collate_failed(self, samples: list[Any], exc: BaseException) -> None:
        """Report why the collate_fn failed on samples that each read fine: shapes, or a type."""
        error = one_line(exc)
        match = FOUND.search(str(exc)) if isinstance(exc, TypeError) else None
        if match:
            found = match.group(1) or match.group(2)
            if found.endswith("NoneType") and "NoneType" in self.causes:
                return  # the samples probe reported the None samples
            short = found.rsplit(".", 1)[-1]
            field = next((p for s in samples for p, v in leaves(s) if type(v).__name__ == short), "sample")
            self.causes.append(error)
            self.add(
                "collate.unsupported_type",
                found=found,
                field=field,
                error=error,
                conversion=conversion(found),
            )
            return
        shapes = sorted({tuple(t.shape) for s in samples for t in tensors_in(s)[:1]})
        if len(shapes) < 2:
            raise exc
        self.causes.append(error)
        self.add(
            "collate.variable_length",
            count=len(samples),
            shapes=", ".join(map(str, shapes[:4])),
            error=error[:80],
        )
