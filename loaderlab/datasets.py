"""Dataset classes used by the notebooks not yet converted to "Show the code" (12-17), the
lab checkers and the doctor. Converted notebooks write their lesson's Datasets in visible
``%%writefile lessonNN.py`` cells instead (README, Contributing).

Like a lesson module, a module here is importable by worker processes started with ``spawn``
or ``forkserver``, which cannot import a notebook's ``__main__``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from loaderlab.loaders import require_positive, require_seconds


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
    """Samples that take ``latency_s`` (plus optional jitter) to fetch, like a remote read.

    ``__getitem__`` sleeps, so it releases the CPU: many workers overlap their waits even on
    two cores. Jitter is exponential with mean ``jitter_s``, deterministic per index.
    Returns ``(features: FloatTensor[dim], label: int)``.
    """

    def __init__(
        self, n: int = 256, latency_s: float = 0.005, jitter_s: float = 0.0, dim: int = 8, seed: int = 0
    ) -> None:
        require_positive(n, "n")
        require_positive(dim, "dim")
        latency_s, jitter_s = require_seconds(latency_s, "latency_s"), require_seconds(jitter_s, "jitter_s")
        self.n, self.latency_s, self.jitter_s, self.dim = n, latency_s, jitter_s, dim
        rng = np.random.default_rng(seed)
        self.delays = self.latency_s + rng.exponential(self.jitter_s, n) if jitter_s else None
        self.features = torch.from_numpy(rng.standard_normal((n, dim)).astype(np.float32))
        self.labels = torch.from_numpy(rng.integers(0, 2, n))

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        delay = self.latency_s if self.delays is None else float(self.delays[index])
        if delay:
            time.sleep(delay)
        return self.features[index], int(self.labels[index])


class MetadataDataset(Dataset):
    """Reads one row of a metadata table per sample, read-only, and returns its length.

    ``rows`` is either a Python list of str (one object per row: reading it writes the row's
    reference count) or a NumPy bytes array (one buffer). Returns a LongTensor scalar.
    """

    def __init__(self, rows: list[str] | np.ndarray) -> None:
        if not len(rows):
            raise ValueError("rows must not be empty")
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor(len(self.rows[index]))
