"""Lab 03 checker: a tuned loader must keep the batches and reach 4x; wrong tunings are rejected.

The starting loader is built as the lab builds it, from notebook 03's lesson module, with 84
samples instead of the lab's 324 (the checker's limits scale with the count, and 84 % 8 keeps
the lab's incomplete last batch of 4): each check reads a quarter as much."""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from lesson03_datasets import LatencyDataset  # written by notebook 03 (notebooks/: pytest's pythonpath)
from torch.utils.data import DataLoader, Dataset

from loaderlab.checks import lab03 as speed
from loaderlab.checks.lab03 import check_fast_loader, reference_batches
from loaderlab.loaders import same_batches

N_SAMPLES, BATCH_SIZE, LATENCY_S = 84, 8, 0.04


def slow_loader(latency_s=LATENCY_S, n=N_SAMPLES):
    """The lab's starting loader, shorter: 84 reads of 40 ms, batches of 8 in a fixed shuffled order."""
    order = torch.randperm(n, generator=torch.Generator().manual_seed(0)).tolist()
    return DataLoader(LatencyDataset(n=n, latency_s=latency_s), batch_size=BATCH_SIZE, sampler=order)


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
    return _same_as(
        loader, num_workers=12, prefetch_factor=4, persistent_workers=True, multiprocessing_context="fork"
    )


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


def no_latency(loader):  # changes the setup, not the loader
    loader.dataset.latency_s = 0
    return loader


def _line(capsys) -> str:
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    return lines[0]


# Forked workers start within the timed pass: over the lab's own 324 samples, as a learner runs
# it. Over 84 the pass has a quarter of the time left for 12 workers to fork, and on a loaded
# CI machine their start (1.1 s of a 1.4 s pass) once cost the 4x.
@pytest.mark.course
@pytest.mark.parametrize(
    ("candidate", "n"), [(threads, N_SAMPLES), pytest.param(many_persistent_workers, 324, marks=needs_fork)]
)
def test_fast_loaders_with_the_same_batches_pass(candidate, n, capsys, no_leaked_workers):
    assert check_fast_loader(candidate, slow_loader(n=n)) is True
    assert _line(capsys) == "✅ same batches, at least 4x the starting throughput"


@pytest.mark.course
@pytest.mark.parametrize(
    ("candidate", "phrase"),
    [
        (shuffled, "holds other samples than the starting loader's batch 0"),
        (bigger_batches, "batches of 16 samples, the starting loader batches of 8"),
        (drop_last, "the last, incomplete batch (4 samples) is missing"),
        (unchanged, "the goal is 4x"),
        pytest.param(one_worker, "the goal is 4x", marks=needs_fork),
        (not_a_loader, "tune(loader) must return a DataLoader, got LatencyDataset"),
        (no_latency, "changed the starting loader's dataset (latency_s: 0.04 → 0)"),
    ],
)
def test_wrong_tunings_fail_with_their_reason(candidate, phrase, capsys, no_leaked_workers):
    assert check_fast_loader(candidate, slow_loader()) is False
    line = _line(capsys)
    assert line.startswith("❌") and phrase in line, line


@pytest.mark.course
def test_stub_is_not_attempted(capsys):
    assert check_fast_loader(stub, slow_loader()) is False
    assert _line(capsys) == "⏳ not attempted yet"


@pytest.mark.course
def test_raising_candidate_gets_one_line(capsys):
    assert check_fast_loader(raises, slow_loader()) is False
    line = _line(capsys)
    assert line.startswith("❌ your code raised ValueError: sampler option is mutually exclusive")
    assert "Traceback" not in line


@pytest.mark.course
def test_reference_batches_are_the_loaders_own_fetched_in_threads():
    loader = slow_loader(latency_s=0.0)
    assert N_SAMPLES % BATCH_SIZE and same_batches(loader, loader)
    assert same_batches(loader, reference_batches(slow_loader()))  # 84 reads of 40 ms, at once
    assert len(reference_batches(loader)[-1][1]) == N_SAMPLES % BATCH_SIZE


@pytest.mark.parametrize(
    ("starting", "phrase"),
    [
        (None, "(a DataLoader with num_workers=0) as slow_loader, got NoneType"),
        (LatencyDataset(n=8, latency_s=0.0), "got LatencyDataset"),
        (
            DataLoader(LatencyDataset(n=8, latency_s=0.0), batch_size=8, num_workers=2),
            "got one with num_workers=2",
        ),
    ],
)
def test_a_wrong_starting_loader_gets_one_sentence(starting, phrase, capsys):
    assert check_fast_loader(threads, starting) is False
    line = _line(capsys)
    assert line.startswith("❌") and phrase in line and "Traceback" not in line, line


class Hangs(ThreadedFetch):
    def __getitems__(self, indices):
        time.sleep(3600)  # a fetch that never returns, in this process


@pytest.mark.course
def test_a_fetch_that_never_returns_is_answered_not_awaited(capsys, monkeypatch):
    monkeypatch.setattr(speed, "BOUND_S", 1.0)
    hangs = lambda loader: _same_as(loader, dataset=Hangs(loader.dataset))  # noqa: E731
    assert check_fast_loader(hangs, slow_loader()) is False
    assert _line(capsys).startswith("❌ the check took over 1 s: does every __getitem__ return?")


def test_an_answer_that_makes_waiting_itself_faster_gains_nothing(capsys, monkeypatch):
    import lesson03_datasets

    def no_sleep(loader):  # the dataset untouched, but every wait of the process made shorter
        monkeypatch.setattr(lesson03_datasets.time, "sleep", lambda seconds: None)
        return loader

    # Python 3.13, fresh clone: the old checker re-timed the starting loader over 3 batches of
    # microseconds and judged the cheat's "speed-up" by a ratio of two noise-sized timings
    for _ in range(3):
        assert check_fast_loader(no_sleep, slow_loader()) is False
        line = _line(capsys)
        assert line.startswith("❌ after tune(loader) ran, the starting loader read 24 samples in"), line
        assert "owe 960 ms of waiting: your code made waiting itself faster" in line, line


def test_the_speed_up_is_judged_against_the_waiting_owed_not_a_second_timing():
    loader = slow_loader()
    assert speed.waiting_owed_s(loader, 24) == pytest.approx(24 * LATENCY_S)
    # time.sleep returns after at least what it was asked: reads that took less did not wait
    assert speed.waited(0.96, 0.96) and speed.waited(0.87, 0.96) and speed.waited(5.0, 0.96)
    assert not speed.waited(0.0001, 0.96) and not speed.waited(0.85, 0.96)


def test_a_starting_dataset_that_does_not_wait_gets_one_sentence(capsys):
    class Instant(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, index):
            return torch.zeros(2), 0

    assert check_fast_loader(threads, DataLoader(Instant(), batch_size=8)) is False
    line = _line(capsys)
    assert line.startswith("❌") and "waits latency_s > 0 seconds per read" in line, line
