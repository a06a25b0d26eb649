"""Lab 03 checker: a tuned loader must keep the batches and reach 4x; wrong tunings are rejected."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from loaderlab.checks.speed import (
    BATCH_SIZE,
    LATENCY_S,
    N_SAMPLES,
    check_fast_loader,
    reference_batches,
    slow_loader,
)
from loaderlab.loaders import same_batches

needs_fork = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="worker start-up under spawn is slow"
)


class ThreadedFetch(Dataset):
    """Fetches the samples of a batch at the same time, in threads (``__getitems__``)."""

    def __init__(self, dataset, threads=8):
        self.dataset, self.threads = dataset, threads

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        return self.dataset[index]

    def __getitems__(self, indices):
        with ThreadPoolExecutor(self.threads) as pool:
            return list(pool.map(self.dataset.__getitem__, indices))


def _same_as(loader, **kwargs):
    options = dict(batch_size=loader.batch_size, sampler=loader.sampler)
    options.update(kwargs)
    return DataLoader(options.pop("dataset", loader.dataset), **options)


def threads(loader):
    return _same_as(loader, dataset=ThreadedFetch(loader.dataset))


def many_persistent_workers(loader):
    return _same_as(loader, num_workers=12, prefetch_factor=4, persistent_workers=True,
                    multiprocessing_context="fork")


def shuffled(loader):
    return _same_as(loader, dataset=ThreadedFetch(loader.dataset), sampler=None, shuffle=True)


def bigger_batches(loader):
    return _same_as(loader, dataset=ThreadedFetch(loader.dataset, threads=16), batch_size=16)


def drop_last(loader):
    return _same_as(loader, dataset=ThreadedFetch(loader.dataset), drop_last=True)


def one_worker(loader):
    return _same_as(loader, num_workers=1, multiprocessing_context="fork")


def unchanged(loader):
    return loader


def not_a_loader(loader):
    return loader.dataset  # the faster dataset, but not wrapped in a DataLoader


def stub(loader):
    raise NotImplementedError("your code here")


def raises(loader):
    return DataLoader(loader.dataset, batch_size=8, sampler=loader.sampler, shuffle=True)


def _line(capsys) -> str:
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    return lines[0]


@pytest.mark.parametrize("candidate", [threads, pytest.param(many_persistent_workers, marks=needs_fork)])
def test_fast_loaders_with_the_same_batches_pass(candidate, capsys, no_leaked_workers):
    assert check_fast_loader(candidate) is True
    assert _line(capsys) == "✅ same batches, at least 4x the starting throughput"


@pytest.mark.parametrize(
    ("candidate", "phrase"),
    [
        (shuffled, "holds other samples than the starting loader's batch 0"),
        (bigger_batches, "batches of 16 samples, the starting loader batches of 8"),
        (drop_last, "the last, incomplete batch (4 samples) is missing"),
        (unchanged, "the goal is 4x"),
        pytest.param(one_worker, "the goal is 4x", marks=needs_fork),
        (not_a_loader, "must be a torch.utils.data.DataLoader, got LatencyDataset"),
    ],
)
def test_wrong_tunings_fail_with_their_reason(candidate, phrase, capsys, no_leaked_workers):
    assert check_fast_loader(candidate) is False
    line = _line(capsys)
    assert line.startswith("❌") and phrase in line, line


def test_stub_is_not_attempted(capsys):
    assert check_fast_loader(stub) is False
    assert _line(capsys) == "⏳ not attempted yet"


def test_raising_candidate_gets_one_line(capsys):
    assert check_fast_loader(raises) is False
    line = _line(capsys)
    assert line.startswith("❌ your code raised ValueError: sampler option is mutually exclusive")
    assert "Traceback" not in line


def test_starting_loader_is_slow_deterministic_and_matches_the_reference():
    loader = slow_loader(latency_s=0.0)
    assert (loader.batch_size, loader.num_workers, len(loader.dataset)) == (BATCH_SIZE, 0, N_SAMPLES)
    assert N_SAMPLES % BATCH_SIZE and LATENCY_S >= 0.02
    assert same_batches(loader, reference_batches()) and same_batches(loader, loader)
    order = list(loader.sampler)
    assert order != sorted(order) and sorted(order) == list(range(N_SAMPLES))
    assert isinstance(reference_batches()[0][0], torch.Tensor)
