"""Two Dataset classes that workers started by ``spawn`` or ``forkserver`` can import: the
doctor's wrapper mixin ``AttributeForwarding`` (``loaderlab.doctor.workers``) and
``LatencyDataset``, samples that sleep like a remote read (the tests of the instruments, the
checkers and the doctor). Notebooks write their own Datasets in ``%%writefile lessonNN.py``
cells (notebook 03's ``LatencyDataset`` is ``lesson03_datasets.py``'s).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from loaderlab._validate import require_positive, require_seconds


class AttributeForwarding:
    """Mixin for dataset wrappers: attribute reads and writes go to the wrapped dataset
    ``_inner`` (set it with ``object.__setattr__``), so code that reaches for the user's
    dataset, e.g. a ``worker_init_fn`` setting ``get_worker_info().dataset.rng``, still works.
    Pickles (to spawn workers) with its own ``__dict__``."""

    def __getattr__(self, name: str) -> Any:
        if name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)

    def __getstate__(self) -> dict:
        return dict(self.__dict__)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)


class LatencyDataset(Dataset):
    """Samples that take ``latency_s`` to fetch, like a remote read: ``__getitem__`` sleeps, so
    it releases the CPU and many workers overlap their waits even on two cores. Returns
    ``(features: FloatTensor[dim], label: int)``."""

    def __init__(self, n: int = 256, latency_s: float = 0.005, dim: int = 8, seed: int = 0) -> None:
        require_positive(n, "n")
        require_positive(dim, "dim")
        self.n, self.latency_s, self.dim = n, require_seconds(latency_s, "latency_s"), dim
        rng = np.random.default_rng(seed)
        self.features = torch.from_numpy(rng.standard_normal((n, dim)).astype(np.float32))
        self.labels = torch.from_numpy(rng.integers(0, 2, n))

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        if self.latency_s:
            time.sleep(self.latency_s)
        return self.features[index], int(self.labels[index])
