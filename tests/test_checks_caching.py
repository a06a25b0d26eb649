"""Lab 04 checker: a cached loader must keep every batch and make later epochs >= 3x faster.

The starting loader is built as the lab builds it, from notebook 04's lesson module (JPEGs of
96×96, batches of 16, a fixed shuffled order), with 40 images instead of 120 to keep it cheap."""

from __future__ import annotations

import multiprocessing
import time

import pytest
import torch
from lesson04_image_files import ImageFiles  # written by notebook 04 (notebooks/: pytest's pythonpath)
from torch.utils.data import DataLoader, Dataset

from loaderlab.checks import lab04 as caching
from loaderlab.checks.lab04 import check_cached_loader
from loaderlab.data import make_image_folder

needs_fork = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(),
    reason="the lost cache of forked workers needs fork",
)


@pytest.fixture(scope="module")
def slow_loader(tmp_path_factory):
    paths = make_image_folder(tmp_path_factory.mktemp("photos"), n=40, size=96)
    order = torch.randperm(40, generator=torch.Generator().manual_seed(0)).tolist()
    return DataLoader(ImageFiles(paths, labels=range(40), mode="RGB"), batch_size=16, sampler=order)


def _line(capsys) -> str:
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    return lines[0]


class LazyDict(Dataset):
    """Correct: decodes a sample the first time it is asked for, keeps it in a dict."""

    def __init__(self, dataset, convert=None):
        self.dataset, self.cache, self.convert = dataset, {}, convert

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        if index not in self.cache:
            image, label = self.dataset[index]
            self.cache[index] = (self.convert(image) if self.convert else image, label)
        return self.cache[index]


class BatchedCache(Dataset):
    """Correct, differently: one tensor filled up front, a whole batch per ``__getitems__``."""

    def __init__(self, dataset):
        samples = [dataset[i] for i in range(len(dataset))]
        self.images = torch.stack([image for image, _ in samples])
        self.labels = torch.tensor([label for _, label in samples])

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.images[index], self.labels[index]

    def __getitems__(self, indices):
        index = torch.as_tensor(indices)
        return self.images.index_select(0, index), self.labels.index_select(0, index)


def _like(loader, dataset, **kwargs):
    options = dict(batch_size=loader.batch_size, sampler=loader.sampler) | kwargs
    return DataLoader(dataset, **options)


def lazy_dict(loader):
    return _like(loader, LazyDict(loader.dataset))


def batched(loader):
    return _like(loader, BatchedCache(loader.dataset), collate_fn=lambda batch: batch)


WRONG = {
    "no cache": (lambda loader: loader, "every epoch still decodes the files"),
    "shuffled": (
        lambda loader: _like(loader, LazyDict(loader.dataset), sampler=None, shuffle=True),
        "keep the starting loader's sampler (shuffle=True draws a new order)",
    ),
    "uint8": (
        lambda loader: _like(loader, LazyDict(loader.dataset, lambda x: (x * 255).to(torch.uint8))),
        "it is (torch.uint8 [16, 3, 96, 96], torch.int64 [16]), the starting loader's (torch.float32",
    ),
    "bigger batches": (
        lambda loader: _like(loader, LazyDict(loader.dataset), batch_size=32),
        "yields 2 batches of up to 32 samples, the starting loader 3 batches of 16 (the last of 8)",
    ),
    "lazy cache in forked workers": pytest.param(
        lambda loader: _like(loader, LazyDict(loader.dataset), num_workers=1, multiprocessing_context="fork"),
        "a cache filled inside forked workers is thrown away with them",
        marks=needs_fork,
    ),
    "not a loader": (
        lambda loader: LazyDict(loader.dataset),
        "tune(loader) must return a DataLoader, got LazyDict",
    ),
}


@pytest.mark.parametrize("candidate", [lazy_dict, batched])
def test_correct_answers_pass(candidate, slow_loader, capsys):
    assert check_cached_loader(candidate, slow_loader) is True
    assert _line(capsys) == (
        "✅ same batches as the starting loader, and from the second epoch on at least 3x as fast"
    )


@pytest.mark.course
@pytest.mark.parametrize(("candidate", "phrase"), list(WRONG.values()), ids=list(WRONG))
def test_each_wrong_answer_gets_its_own_sentence(candidate, phrase, slow_loader, capsys, no_leaked_workers):
    assert check_cached_loader(candidate, slow_loader) is False
    line = _line(capsys)
    assert line.startswith("❌") and phrase in line, line


def test_stub_and_a_wrong_starting_loader(slow_loader, capsys):
    def stub(loader):
        raise NotImplementedError("your code here")

    assert check_cached_loader(stub, slow_loader) is False
    assert _line(capsys) == "⏳ not attempted yet"
    assert check_cached_loader(lazy_dict, slow_loader.dataset) is False
    assert "needs the lab's starting loader" in _line(capsys)


class Hangs(LazyDict):
    def __getitem__(self, index):
        time.sleep(3600)  # a read that never returns, in this process


@pytest.mark.course
def test_a_read_that_never_returns_is_answered_not_awaited(slow_loader, capsys, monkeypatch):
    monkeypatch.setattr(caching, "BOUND_S", 3.0)  # the starting loader's two epochs take a fraction of it
    hangs = lambda loader: _like(loader, Hangs(loader.dataset))  # noqa: E731
    assert check_cached_loader(hangs, slow_loader) is False
    assert _line(capsys).startswith("❌ the check took over 3 s: does every __getitem__ return?")


def test_the_reason_given_for_slow_epochs_is_true_of_the_workers():
    assert "every epoch still decodes" in caching.why_slow(DataLoader(range(4)))
    assert "starts 2 worker(s) every epoch" in caching.why_slow(DataLoader(range(4), num_workers=2))
    persistent = caching.why_slow(DataLoader(range(4), num_workers=2, persistent_workers=True))
    assert "2 persistent worker(s) keep their caches" in persistent, persistent
    assert "every epoch" not in persistent.split(",")[0], persistent
