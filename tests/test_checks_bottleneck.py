"""Lab 14 checker: the wait share of a pipeline measured before and after its slow stage is fixed."""

from __future__ import annotations

import functools
import importlib
import time

import pytest
import torch
from torch.utils.data import DataLoader

from loaderlab.checks import lab14 as bottleneck
from loaderlab.checks.lab14 import check_bottleneck

# The lab's pipeline, written by the solution's %%writefile lab14.py cell (solutions/ on
# pytest's pythonpath, so that workers find it by name).
lab14 = importlib.import_module("lab14")

pytestmark = pytest.mark.usefixtures("no_leaked_workers")


def _verdict(capsys, fix, measure=None, n=12) -> str:
    ok = check_bottleneck(fix, DataLoader(lab14.Records(n), batch_size=4), measure=measure)
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1 and "Traceback" not in out, out
    assert ok == out.startswith("✅")
    return out


class LoadedOnce(lab14.Records):
    """Correct, unlike the solution: the vocabulary is loaded in __init__."""

    def __init__(self, n):
        super().__init__(n)
        self.vocabulary = self.load_vocabulary()

    def __getitem__(self, index):
        return torch.tensor([self.vocabulary[w] for w in self.read(index)]), index


@functools.lru_cache(maxsize=1)
def _vocabulary():
    return lab14.Records().load_vocabulary()


class Cached(lab14.Records):
    """Correct, differently: one vocabulary per process, from a module-level cache."""

    def __getitem__(self, index):
        return torch.tensor([_vocabulary()[w] for w in self.read(index)]), index


def total_minus_steps(loader, train_step):
    """Correct, differently: the wait is the epoch's time minus the steps' time."""
    steps, first = 0.0, None
    for batch in loader:
        if first is None:
            first = time.perf_counter()
            continue  # the first batch: start-up
        t = time.perf_counter()
        train_step(batch)
        steps += time.perf_counter() - t
    total = time.perf_counter() - first
    return (total - steps) / total


@pytest.mark.course
@pytest.mark.timing
def test_correct_answers_pass(capsys):
    out = _verdict(capsys, lambda loader: DataLoader(LoadedOnce(len(loader.dataset)), batch_size=4))
    assert out.startswith("✅ same 3 batches"), out
    out = _verdict(
        capsys,
        lambda loader: DataLoader(Cached(len(loader.dataset)), batch_size=4),
        measure=total_minus_steps,
    )
    assert out.startswith("✅") and "your wait_share agrees on both" in out, out


@pytest.mark.parametrize(
    ("fix", "sentence"),
    [
        (lambda loader: DataLoader(loader.dataset, batch_size=4), "your loader still waits"),
        (
            lambda loader: DataLoader(LoadedOnce(len(loader.dataset)), batch_size=4, shuffle=True),
            "differs from the starting loader's batch",
        ),
        (lambda loader: DataLoader(LoadedOnce(len(loader.dataset)), batch_size=8), "keep batch_size"),
        (lambda loader: loader.dataset, "fix must return a DataLoader"),
    ],
    ids=["unchanged", "shuffled", "bigger-batches", "not-a-loader"],
)
def test_wrong_fixes_fail_with_their_own_sentence(capsys, fix, sentence):
    out = _verdict(capsys, fix)
    assert out.startswith("❌") and sentence in out, out


@pytest.mark.course
@pytest.mark.timing
def test_more_workers_that_only_spread_the_slow_stage_fail(capsys):
    # the lab's 24 samples: 5 batches after the first, in the steady state of 2 workers (about
    # a third of the time waiting; a busy machine slows the step and the reads alike)
    out = _verdict(capsys, lambda loader: DataLoader(loader.dataset, batch_size=4, num_workers=2), n=24)
    assert out.startswith("❌ with 2 workers your loader still waits"), out


@pytest.mark.course
def test_a_wrong_measurement_fails(capsys):
    def percent(loader, train_step):
        return 100 * total_minus_steps(loader, train_step)

    out = _verdict(capsys, lambda loader: DataLoader(LoadedOnce(len(loader.dataset)), batch_size=4), percent)
    assert out.startswith("❌ your wait_share returned") and "the starting loader" in out, out


def test_stub_and_nothing_are_not_attempted(capsys):
    class Stub(lab14.Records):
        def __getitem__(self, index):
            raise NotImplementedError("your code here")

    verdict = _verdict(capsys, lambda loader: DataLoader(Stub(12), batch_size=4))
    assert verdict.startswith("⏳ not attempted yet")
    assert _verdict(capsys, None).startswith("⏳ not attempted yet")


@pytest.mark.course
@pytest.mark.timing
def test_a_getitem_that_never_returns_is_answered_not_awaited(capsys, monkeypatch):
    class Hangs(lab14.Records):
        def __getitem__(self, index):
            time.sleep(3600)  # a read that never returns, in this process (num_workers=0)

    monkeypatch.setattr(bottleneck, "BOUND_S", 5.0)  # the starting loader's 3 timed batches take 0.5 s
    start = time.perf_counter()
    out = _verdict(capsys, lambda loader: DataLoader(Hangs(len(loader.dataset)), batch_size=4))
    assert out.startswith("❌ the check took over 5 s: does every __getitem__ return?"), out
    assert time.perf_counter() - start < 60  # the 5 s bound + 55 s of margin; unbounded: 3600 s
