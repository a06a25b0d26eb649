"""What the doctor runs inside DataLoader workers (probe wrappers and sample fingerprints, importable
by spawn workers) and ``copied``: the pickled copies of the user's objects that the probes use."""

from __future__ import annotations

import copy
import hashlib
import io
import os
import pickle
import threading
import time
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from loaderlab.cores import usable_cores
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
        items: Any = np.ravel(obj)[:4096] if isinstance(obj, np.ndarray) else obj
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
    return hashlib.blake2b(
        b"".join(["|".join(tags).encode(), *(a.tobytes() for a in nums)]), digest_size=12
    ).hexdigest()


def state_of(dataset: Any) -> dict[str, str]:
    """Return ``{name: fingerprint}`` of the dataset's small attributes (numbers, strings, tensors
    of ≤ 64 values): what a worker's copy of the dataset holds now."""
    small = (*_SCALARS, str, bytes, type(None))
    return {
        k: fingerprint(v)
        for k, v in getattr(dataset, "__dict__", {}).items()
        if isinstance(v, small) or isinstance(v, (torch.Tensor, np.ndarray)) and np.prod(v.shape) <= 64
    }


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
        return len(self._inner)

    def __getitem__(self, index: int) -> tuple[int, int, Any]:
        sample, worker = self._inner[index], getattr(get_worker_info(), "id", -1)
        return index, worker, state_of(self._inner) if self._with_state else sample


class ProbeIterable(AttributeForwarding, IterableDataset):
    """Wraps an IterableDataset; yields ``(worker id or -1, fingerprint)`` for each item."""

    def __init__(self, dataset: IterableDataset) -> None:
        object.__setattr__(self, "_inner", dataset)

    def __len__(self) -> int:
        return len(self._inner)  # TypeError when the stream has no length

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
    """Return the thread pools loaded in this process and their sizes ("openblas 2 thread(s), ..."),
    from threadpoolctl when it is installed, then torch's own setting and the thread variables set."""
    pools = [f"torch {torch.get_num_threads()} thread(s)"]
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        pass
    else:
        pools[:0] = [
            f"{p.get('internal_api', p.get('user_api'))} {p.get('num_threads')} thread(s)"
            for p in threadpool_info()
        ]
    pools += [f"{name}={os.environ[name]}" for name in THREAD_VARIABLES if name in os.environ]
    return ", ".join(pools)


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
SETTLE_S = 0.3  # OpenBLAS re-creates its threads in a forked worker; they spin ~0.1 s, then sleep
HANDOVER_THREADS = ("QueueFeederThread",)  # multiprocessing's: pickles the results, not the samples' work


def thread_cpu_ns() -> dict[int, int]:
    """Return the CPU time (ns) each thread of this process has used, by thread id, from
    /proc/self/task/*/schedstat (Linux; a running thread's figure may lag by one scheduler tick);
    {} elsewhere."""
    used = {}
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                used[int(tid)] = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return {}
    return used


_settled_in = -1  # the process id whose thread pools have settled (the first fetch waits in each worker)


class ThreadProbe(AttributeForwarding, Dataset):
    """Wraps a map-style dataset; item ``i`` is ``(i, CPU ns of the fetching thread, {thread id:
    CPU ns} of the worker's other threads during the fetch, the thread pools, usable cores)``
    after fetching ``dataset[i]`` in the worker, or ``None`` instead of the dict where the other
    threads cannot be read.

    CPU time, not wall time: a thread that works while the worker fetches is a thread the samples
    keep busy, however loaded the machine is (a waiting thread uses no CPU). The first fetch in
    each worker is followed by a pause (``SETTLE_S``) so that pool threads that spin after a fork
    (OpenBLAS re-creates its own) are asleep before the measured fetches; item ``i`` of that first
    fetch says ``{}``."""

    def __init__(self, dataset: Dataset) -> None:
        object.__setattr__(self, "_inner", dataset)

    def __len__(self) -> int:
        return len(self._inner)

    def __getitem__(self, index: int) -> tuple[int, int, dict[int, int] | None, str, int]:
        global _settled_in
        me = threading.get_native_id()
        handover = {t.native_id for t in threading.enumerate() if t.name in HANDOVER_THREADS}
        before, t0 = thread_cpu_ns(), time.thread_time_ns()
        self._inner[index]
        own, after = time.thread_time_ns() - t0, thread_cpu_ns()
        others: dict[int, int] | None = {
            t: ns - before.get(t, 0) for t, ns in after.items() if t != me and t not in handover
        }
        if not after:
            others = None
        elif _settled_in != os.getpid():
            _settled_in, others = os.getpid(), {}
            time.sleep(SETTLE_S)
        return index, own, others, thread_pools(), usable_cores()


def busy_threads(own_ns: int, others_ns: dict[int, int]) -> int:
    """Return how many threads worked while the worker fetched: the fetching thread and each other
    thread that used at least 1 ms and a twentieth of its CPU time over the same fetches. (An idle
    pool thread uses none; a pool thread doing its share of a product uses about as much as the
    fetching thread, which also spins while it waits for that share on a loaded machine.)"""
    return 1 + sum(ns >= max(own_ns / 20, 1_000_000) for ns in others_ns.values())
