"""Caching decoded samples in memory, and fetching whole batches from in-memory tensors.

The classes live in the package (not in notebook cells) so that ``spawn`` workers can
unpickle them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

from loaderlab.datasets import FewTensorsWhenPickled
from loaderlab.loaders import require_positive


class ResizeToTensor:
    """A transform: returns a PIL image resized to ``size``×``size`` as a float tensor
    ``[C, size, size]`` in ``[0, 1]`` (C = the image's number of bands).

    A class rather than a lambda, so a DataLoader worker started with ``spawn`` can unpickle it.
    """

    def __init__(self, size: int) -> None:
        self.size = require_positive(size, "size")

    def __call__(self, image: Image.Image) -> torch.Tensor:
        if not isinstance(image, Image.Image):
            raise TypeError(f"image must be a PIL.Image.Image, got {type(image).__name__}")
        array = np.asarray(image.resize((self.size, self.size), Image.Resampling.BILINEAR))
        if array.ndim == 2:
            array = array[:, :, None]
        return torch.from_numpy(array.copy()).permute(2, 0, 1).float().div_(255)

    def __repr__(self) -> str:
        return f"ResizeToTensor(size={self.size})"


class CachedDataset(FewTensorsWhenPickled, Dataset):
    """Wraps a map-style dataset; returns each sample from an in-memory cache after its first
    fetch (``preload=True`` fetches them all up front).

    The cache is a plain dict owned by the process that fills it: a DataLoader worker fills
    its *own copy*, which is lost when the worker exits, so the main process's ``hits`` and
    ``misses`` stay unchanged by an epoch with ``num_workers > 0``. Preload in the main
    process before creating workers to share one filled cache with them. Pickled (for spawn or
    forkserver workers), the cached tensors travel as one (``FewTensorsWhenPickled``).
    """

    def __init__(self, dataset: Dataset, preload: bool = False) -> None:
        if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
            raise TypeError(
                f"dataset must be a map-style dataset (with __getitem__ and __len__), "
                f"got {type(dataset).__name__}"
            )
        if not isinstance(preload, bool):
            raise TypeError(f"preload must be a bool, got {type(preload).__name__}")
        self.dataset = dataset
        self.cache: dict[int, Any] = {}
        self.hits = 0
        self.misses = 0
        if preload:
            self.preload()

    def preload(self) -> CachedDataset:
        """Return ``self`` after fetching every sample not yet cached (counted as misses)."""
        for index in range(len(self)):
            self[index]
        return self

    def __len__(self) -> int:
        return len(self.dataset)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> Any:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"index must be an int, got {type(index).__name__}")
        index = int(index)
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for a dataset of {len(self)}")
        index %= len(self)
        if index in self.cache:
            self.hits += 1
            return self.cache[index]
        self.misses += 1
        sample = self.dataset[index]
        self.cache[index] = sample
        return sample


class BatchedTensorDataset(Dataset):
    """In-memory ``(features, labels)`` that can return a whole batch at once.

    ``__getitem__(i)`` returns one sample ``(features[i], labels[i])``. ``__getitems__(indices)``
    returns the batch ``(features[indices], labels[indices])`` in one indexing operation; the
    DataLoader's fetcher (``torch/utils/data/_utils/fetch.py``, ``_MapDatasetFetcher.fetch``)
    calls it instead of ``__getitem__`` per index, then passes the result to ``collate_fn``,
    so pair it with ``collate_fn=keep_batch``.
    """

    def __init__(self, features: torch.Tensor, labels: torch.Tensor) -> None:
        for name, value in (("features", features), ("labels", labels)):
            if not isinstance(value, torch.Tensor):
                raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
            if value.dim() == 0:
                raise ValueError(f"{name} must have a first (sample) dimension")
        if len(features) != len(labels):
            raise ValueError(f"features has {len(features)} rows but labels has {len(labels)}")
        self.features, self.labels = features, labels
        self.getitems_calls = 0

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.features[index], self.labels[index]

    def __getitems__(self, indices: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        self.getitems_calls += 1
        idx = torch.as_tensor(indices, dtype=torch.long)
        return self.features.index_select(0, idx), self.labels.index_select(0, idx)


def keep_batch(batch: Any) -> Any:
    """Return ``batch`` unchanged: the collate_fn for a dataset whose ``__getitems__`` already
    returns a collated batch."""
    return batch
