"""Unit tests for loaderlab.caching: the in-memory cache, batched fetching, the resize transform."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader, RandomSampler, TensorDataset

from loaderlab.caching import BatchedTensorDataset, CachedDataset, ResizeToTensor, keep_batch
from loaderlab.data import make_image_folder, workspace
from loaderlab.datasets import ImageFileDataset
from loaderlab.loaders import same_batches


class CountingDataset(torch.utils.data.Dataset):
    def __init__(self, n: int) -> None:
        self.n, self.calls = n, 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        self.calls += 1
        return torch.tensor([index, index * index])


def test_cached_dataset_fetches_each_sample_once():
    inner = CountingDataset(10)
    cached = CachedDataset(inner)
    for _ in range(3):
        values = [cached[i] for i in range(10)]
    assert inner.calls == 10 and cached.misses == 10 and cached.hits == 20
    assert [int(v[1]) for v in values] == [i * i for i in range(10)]
    assert cached[-1] is cached[9]


def test_cached_dataset_preload_and_validation():
    inner = CountingDataset(5)
    cached = CachedDataset(inner, preload=True)
    assert inner.calls == 5 and len(cached.cache) == 5
    with pytest.raises(IndexError):
        cached[5]
    with pytest.raises(TypeError, match="index"):
        cached[1.0]
    with pytest.raises(TypeError, match="dataset"):
        CachedDataset(42)
    with pytest.raises(TypeError, match="preload"):
        CachedDataset(inner, preload="yes")


def test_cache_filled_in_workers_does_not_reach_the_main_process(no_leaked_workers):
    cached = CachedDataset(CountingDataset(16))
    batches = list(DataLoader(cached, batch_size=4, num_workers=2))
    assert len(batches) == 4
    assert cached.misses == 0 and len(cached.cache) == 0  # the workers filled their own copies
    list(DataLoader(cached, batch_size=4, num_workers=0))
    assert cached.misses == 16


def test_cached_image_dataset_returns_the_same_tensors():
    ws = workspace()
    try:
        paths = make_image_folder(Path(ws.name), n=4, size=16, n_rgba=1)
        decoded = ImageFileDataset(paths, mode="RGB")
        cached = CachedDataset(decoded, preload=True)
        for i in range(len(paths)):
            assert torch.equal(cached[i][0], decoded[i][0]) and cached[i][0].shape == (3, 16, 16)
    finally:
        ws.cleanup()


def test_resize_to_tensor():
    image = Image.new("RGBA", (10, 20), (255, 0, 0, 255))
    tensor = ResizeToTensor(8)(image)
    assert tensor.shape == (4, 8, 8) and tensor.dtype == torch.float32
    assert tensor[0].min() == 1.0 and tensor[1].max() == 0.0
    assert ResizeToTensor(5)(Image.new("L", (3, 3))).shape == (1, 5, 5)
    with pytest.raises(ValueError, match="size"):
        ResizeToTensor(0)
    with pytest.raises(TypeError, match="image"):
        ResizeToTensor(4)(torch.zeros(3, 4, 4))


def _tensors(n: int = 100):
    g = torch.Generator().manual_seed(0)
    return torch.randn(n, 4, generator=g), torch.randint(0, 3, (n,), generator=g)


def test_getitems_gives_the_same_batches_as_per_sample_fetching():
    features, labels = _tensors()
    per_sample = DataLoader(
        TensorDataset(features, labels), batch_size=16,
        sampler=RandomSampler(range(100), generator=torch.Generator().manual_seed(1)),
    )
    batched_ds = BatchedTensorDataset(features, labels)
    batched = DataLoader(
        batched_ds, batch_size=16, collate_fn=keep_batch,
        sampler=RandomSampler(range(100), generator=torch.Generator().manual_seed(1)),
    )
    assert same_batches(per_sample, batched)
    assert batched_ds.getitems_calls == 7  # one call per batch (100 / 16 -> 7 batches)


def test_getitems_in_workers(no_leaked_workers):
    features, labels = _tensors(64)
    loader = DataLoader(BatchedTensorDataset(features, labels), batch_size=16,
                        collate_fn=keep_batch, num_workers=2)
    xs = torch.cat([x for x, _ in loader])
    assert torch.equal(xs, features)


def test_batched_tensor_dataset_validation():
    with pytest.raises(TypeError, match="features"):
        BatchedTensorDataset([1, 2], torch.zeros(2))
    with pytest.raises(ValueError, match="rows"):
        BatchedTensorDataset(torch.zeros(3, 2), torch.zeros(2))
    assert keep_batch([1, 2]) == [1, 2]
