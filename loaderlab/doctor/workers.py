"""What the doctor runs inside DataLoader workers (probe wrappers and sample fingerprints, importable
by spawn workers) and ``copied``: the pickled copies of the user's objects that the probes use."""

from __future__ import annotations

import copy
import hashlib
import io
import os
import pickle
import time
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from loaderlab.datasets import AttributeForwarding

_SCALARS = (int, float, bool, np.number, np.bool_)


def _walk(obj: Any, nums: list[np.ndarray], tags: list[str], depth: int = 0) -> tuple[list, list[str]]:
    """Append a sample's numbers (flat float64) to ``nums``, its structure and other values to ``tags``."""
    if isinstance(obj, torch.Tensor) or isinstance(obj, np.ndarray) and obj.dtype.kind != "O":
        tags.append(f"{obj.dtype}{tuple(obj.shape)}")
        array = obj.detach().cpu().double().numpy() if isinstance(obj, torch.Tensor) else obj
        nums.append(np.asarray(array, np.float64).reshape(-1))
    elif isinstance(obj, _SCALARS):
        tags.append(type(obj).__name__)
        nums.append(np.array([float(obj)]))
    elif depth > 6 or isinstance(obj, (str, bytes, type(None))):
        tags.append(repr(obj) if depth <= 6 else type(obj).__name__)
    elif isinstance(obj, (Mapping, list, tuple, np.ndarray)):
        keys = sorted(obj, key=repr) if isinstance(obj, Mapping) else None
        tags.append(f"{type(obj).__name__}{keys!r}[")
        items = np.ravel(obj)[:4096] if isinstance(obj, np.ndarray) else obj
        for item in items if keys is None else [obj[k] for k in keys]:
            _walk(item, nums, tags, depth + 1)
        tags.append("]")
    elif hasattr(obj, "tobytes"):  # PIL images and the like
        tags.append(type(obj).__name__ + hashlib.blake2b(obj.tobytes(), digest_size=12).hexdigest())
    else:  # plain objects: their fields (never a repr with an address)
        tags.append(type(obj).__name__)
        _walk(getattr(obj, "__dict__", {}), nums, tags, depth + 1)
    return nums, tags


def numbers(sample: Any) -> np.ndarray:
    """Return every number in a sample as one flat float64 vector, in a fixed order."""
    nums = _walk(sample, [], [])[0]
    return np.concatenate(nums) if nums else np.zeros(0)


def fingerprint(sample: Any) -> str:
    """Return a digest of a sample's content: equal samples give equal fingerprints in any process."""
    nums, tags = _walk(sample, [], [])
    return hashlib.blake2b(b"".join(["|".join(tags).encode(), *(a.tobytes() for a in nums)]),
                           digest_size=12).hexdigest()


def state_of(dataset: Any) -> dict[str, str]:
    """Return ``{name: fingerprint}`` of the dataset's small attributes (numbers, strings, tensors
    of ≤ 64 values): what a worker's copy of the dataset holds now."""
    small = (*_SCALARS, str, bytes, type(None))
    return {k: fingerprint(v) for k, v in getattr(dataset, "__dict__", {}).items() if isinstance(v, small)
            or isinstance(v, (torch.Tensor, np.ndarray)) and np.prod(v.shape) <= 64}


class QuietWorkers:
    """The probe loaders' ``worker_init_fn``: warnings in a worker are not printed (the doctor
    reports those this process sees; a forked worker would record them in its own copy of the
    doctor's list anyway), then the loader's own ``worker_init_fn`` runs."""

    def __init__(self, worker_init_fn: Any = None) -> None:
        self.worker_init_fn = worker_init_fn

    def __call__(self, worker_id: int) -> None:
        warnings.simplefilter("ignore")
        if self.worker_init_fn is not None:
            self.worker_init_fn(worker_id)


def identity(batch: Any) -> Any:
    """Return ``batch`` unchanged: the collate_fn of the probe loaders."""
    return batch


def random_part(first: Any, second: Any) -> np.ndarray | None:
    """Return the mask of the numbers that differ between two fetches of one index (None when
    the two do not hold as many numbers)."""
    a, b = numbers(first), numbers(second)
    return ~((a == b) | (np.isnan(a) & np.isnan(b))) if a.shape == b.shape else None


def equal_positions(mask: np.ndarray, first: Any, second: Any) -> set[int] | None:
    """Return the random positions (``mask``) where two samples hold the same number (None when
    they do not hold as many numbers)."""
    a, b = numbers(first), numbers(second)
    return set(np.flatnonzero(mask & (a == b)).tolist()) if a.shape == b.shape == mask.shape else None


class ProbeDataset(AttributeForwarding, Dataset):
    """Wraps a map-style dataset; item ``i`` is ``(i, worker id or -1, dataset[i])``, or with
    ``with_state`` ``(i, worker id, state_of(dataset) after fetching dataset[i])``."""

    def __init__(self, dataset: Dataset, with_state: bool = False) -> None:
        object.__setattr__(self, "_inner", dataset)
        object.__setattr__(self, "_with_state", bool(with_state))

    def __len__(self) -> int:
        return len(self._inner)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> tuple[int, int, Any]:
        sample, worker = self._inner[index], getattr(get_worker_info(), "id", -1)
        return index, worker, state_of(self._inner) if self._with_state else sample


class ProbeIterable(AttributeForwarding, IterableDataset):
    """Wraps an IterableDataset; yields ``(worker id or -1, fingerprint)`` for each item."""

    def __init__(self, dataset: IterableDataset) -> None:
        object.__setattr__(self, "_inner", dataset)

    def __len__(self) -> int:
        return len(self._inner)  # type: ignore[arg-type] - TypeError when the stream has no length

    def __iter__(self) -> Iterator[tuple[int, str]]:
        worker = getattr(get_worker_info(), "id", -1)
        return ((worker, fingerprint(item)) for item in self._inner)


class _CopyPickler(pickle.Pickler):
    """``pickle.dumps``, but shared-memory tensors stay shared in the copy (a dataset may hand
    epochs to its workers through one)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, torch.Tensor) and obj.is_shared() and not obj.is_cuda:
            return torch.Tensor.share_memory_, (obj.detach().clone(),)
        return NotImplemented


def copied(objects: Any) -> tuple[Any, str | None]:
    """Return ``(copy, None)``, pickled together (shared references stay shared) or else
    deep-copied, or ``(None, reason)`` when neither works."""
    buffer = io.BytesIO()
    try:
        _CopyPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(objects)
        return pickle.loads(buffer.getvalue()), None
    except Exception as exc:  # noqa: BLE001 - fall back to deepcopy, then give the reason
        try:
            return copy.deepcopy(objects), None
        except Exception:  # noqa: BLE001
            return None, f"cannot be copied: {type(exc).__name__}: {exc}"


def thread_pools() -> str:
    """Return the thread pools loaded in this process and their sizes ("openblas 2 threads, ..."),
    from threadpoolctl when it is installed, else torch's own setting."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return f"torch {torch.get_num_threads()} thread(s)"
    pools = [f"{p.get('internal_api', p.get('user_api'))} {p.get('num_threads')} thread(s)"
             for p in threadpool_info()]
    return ", ".join([*pools, f"torch {torch.get_num_threads()} thread(s)"])


def thread_ticks() -> dict[int, int]:
    """Return the CPU time (clock ticks, user + system) each thread of this process has used, by
    thread id, from /proc/self/task (Linux); {} elsewhere."""
    ticks = {}
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks[int(tid)] = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    except OSError:
        return {}
    return ticks


class ThreadProbe(AttributeForwarding, Dataset):
    """Wraps a map-style dataset; item ``i`` is ``(i, wall s, CPU s of the whole process, thread
    pools, CPU ticks per thread)`` after fetching ``dataset[i]`` in the worker: the threads whose
    ticks grow between fetches are those the samples keep busy, however loaded the machine is."""

    def __init__(self, dataset: Dataset) -> None:
        object.__setattr__(self, "_inner", dataset)

    def __len__(self) -> int:
        return len(self._inner)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> tuple[int, float, float, str, dict[int, int]]:
        t0, c0 = time.perf_counter(), time.process_time()
        self._inner[index]
        return index, time.perf_counter() - t0, time.process_time() - c0, thread_pools(), thread_ticks()


def busy_threads(first: dict[int, int], last: dict[int, int]) -> int:
    """Return how many threads used CPU between two ``thread_ticks`` readings: at least 2 ticks and
    half of the busiest thread's (a library's pool thread works beside the worker's main thread;
    the queue's feeder thread, which pickles the batches, uses far less)."""
    used = [last[t] - first.get(t, 0) for t in last]
    top = max(used, default=0)
    return sum(u >= 2 and u >= top / 2 for u in used)
