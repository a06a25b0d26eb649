"""Notebook 04's lesson modules (notebooks/lesson04_image_files*.py, written by its %%writefile cells):
CachedImages keeps a few tensors whatever the sample count, so forkserver workers accept it
where a dict of 256 tensors fails with "too many fds"; BatchedTensors' __getitems__ returns
what per-sample fetching and the default collate return."""

from __future__ import annotations

import pytest
import torch
from course_code import ROOT, lesson
from torch.utils.data import DataLoader, Dataset, TensorDataset


class Squares(Dataset):
    """300 samples made on access: the wrapped dataset holds no tensors itself."""

    def __len__(self):
        return 300

    def __getitem__(self, index):
        return torch.full((3, 4, 4), float(index)), index % 5


class DictCache(Dataset):
    """The layout CachedImages avoids: one tensor per cached sample."""

    def __init__(self, samples):
        self.cache = {i: sample for i, sample in enumerate(samples)}

    def __len__(self):
        return len(self.cache)

    def __getitem__(self, index):
        return self.cache[index]


@pytest.mark.course
def test_cached_images_keep_three_tensors_and_reach_forkserver_workers(monkeypatch, no_leaked_workers):
    monkeypatch.syspath_prepend(str(ROOT / "notebooks"))  # forkserver workers import lesson04_cache
    samples = [Squares()[i] for i in range(300)]
    cached = lesson("lesson04_cache").CachedImages(Squares())
    assert len([v for v in vars(cached).values() if isinstance(v, torch.Tensor)]) == 3
    assert cached.filled.all() and torch.equal(cached[7][0], samples[7][0]) and int(cached[7][1]) == 2
    loader = DataLoader(cached, batch_size=100, num_workers=1, multiprocessing_context="forkserver")
    xb, yb = zip(*loader, strict=True)
    assert torch.equal(torch.cat(xb)[:, 0, 0, 0], torch.arange(300.0))
    with pytest.raises(ValueError, match="too many fds"):
        next(
            iter(
                DataLoader(
                    DictCache(samples), batch_size=100, num_workers=1, multiprocessing_context="forkserver"
                )
            )
        )


def test_lazy_cache_fills_on_first_access_only():
    calls = []

    class Counting(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, index):
            calls.append(index)
            return torch.ones(2) * index, index

    lazy = lesson("lesson04_cache").CachedImages(Counting(), preload=False)
    assert calls == [0] and not lazy.filled.any()  # __init__ reads sample 0 for the shape
    lazy[2], lazy[2], lazy[3]
    assert calls == [0, 2, 3] and lazy.filled.tolist() == [False, False, True, True]


def test_getitems_returns_the_per_sample_batch():
    lesson04_whole_batches = lesson("lesson04_whole_batches")
    features, labels = torch.randn(50, 3), torch.arange(50)
    dataset = lesson04_whole_batches.BatchedTensors(features, labels)
    order = [4, 9, 0, 33]
    per_sample = next(iter(DataLoader(TensorDataset(features, labels), batch_size=4, sampler=order)))
    dataset_getitems = dataset.__getitems__(order)
    loader = DataLoader(dataset, batch_size=4, sampler=order, collate_fn=lesson04_whole_batches.keep_batch)
    batched = next(iter(loader))
    for got in (dataset_getitems, batched):
        assert torch.equal(got[0], per_sample[0]) and torch.equal(got[1], per_sample[1])
