"""Lab 13 checker: a dataset that a StatefulDataLoader resumes exactly mid-epoch."""

from __future__ import annotations

import time

import pytest
import torch
from torch.utils.data import Dataset, get_worker_info

from loaderlab.checks import lab13 as resume
from loaderlab.checks.lab13 import check_resumable

pytest.importorskip("torchdata")


def _verdict(capsys, candidate) -> str:
    ok = check_resumable(candidate)
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1 and "Traceback" not in out, out
    assert ok == out.startswith("✅")
    return out


def _worker() -> int:
    info = get_worker_info()
    return 0 if info is None else 1 + info.id


class Counted(Dataset):
    """Correct, unlike the solution: the state is the number of draws, replayed on load."""

    def __init__(self, seed, n=24):
        self.seed, self.n, self.generator, self.draws = seed, n, None, 0

    def __len__(self):
        return self.n

    def _generator(self):
        if self.generator is None:
            self.generator = torch.Generator().manual_seed(100 * self.seed + _worker())
        return self.generator

    def __getitem__(self, index):
        self.draws += 1
        return torch.tensor([float(index)]) + torch.randn(2, generator=self._generator()), index

    def state_dict(self):
        return {"draws": self.draws}

    def load_state_dict(self, state):
        self.generator, self.draws = None, 0
        for _ in range(state["draws"]):
            self.draws += 1
            torch.randn(2, generator=self._generator())


class Reseeded(Counted):
    """Correct, differently: every draw has a generator of its own, seeded from (seed, process, count)."""

    def __getitem__(self, index):
        self.draws += 1
        generator = torch.Generator().manual_seed(hash((self.seed, _worker(), self.draws)) % 2**62)
        return {"x": torch.rand(3, generator=generator) + index, "index": index}

    def load_state_dict(self, state):
        self.draws = int(state["draws"])


class Forgets(Counted):
    def load_state_dict(self, state):
        pass


class GlobalRng(Counted):
    def __getitem__(self, index):
        return torch.tensor([float(index)]) + torch.randn(2), index


class SavesGenerator(Counted):
    def state_dict(self):
        return {"generator": self._generator()}

    def load_state_dict(self, state):
        self.generator = state["generator"]


class NoMethods(Dataset):
    def __init__(self, seed):
        self.inner = Counted(seed)

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, index):
        return self.inner[index]


class NoNoise(Counted):
    def __getitem__(self, index):
        return torch.tensor([float(index)]), index


class Stub(Counted):
    def state_dict(self):
        raise NotImplementedError("your code here")


@pytest.mark.parametrize("make_dataset", [Counted, Reseeded], ids=["replay-draws", "reseed-per-draw"])
def test_correct_answers_pass(capsys, no_leaked_workers, make_dataset):
    out = _verdict(capsys, make_dataset)
    assert out.startswith("✅") and "num_workers [0, 2]" in out, out


@pytest.mark.parametrize(
    ("make_dataset", "sentence"),
    [
        (Forgets, "with num_workers=0, batch 2 (the first 2 came before the interrupt) differs"),
        (GlobalRng, "two uninterrupted epochs over make_dataset(seed) gave different noise"),
        (SavesGenerator, "did not survive torch.save and torch.load(weights_only=True)"),
        (NoMethods, "your dataset has no state_dict and no load_state_dict"),
        (NoNoise, "gave the same sample twice"),
    ],
    ids=["load-forgets", "global-rng", "saves-generator", "no-methods", "no-noise"],
)
def test_wrong_answers_fail_with_their_own_sentence(capsys, no_leaked_workers, make_dataset, sentence):
    out = _verdict(capsys, make_dataset)
    assert out.startswith("❌") and sentence in out, out


def test_stub_and_nothing_are_not_attempted(capsys, no_leaked_workers):
    assert _verdict(capsys, Stub).startswith("⏳ not attempted yet")
    assert _verdict(capsys, None).startswith("⏳ not attempted yet")


class Hangs(Counted):
    def __getitem__(self, index):
        time.sleep(3600)  # a read that never returns, in this process (num_workers=0)


@pytest.mark.course
@pytest.mark.timing
def test_a_getitem_that_never_returns_is_answered_not_awaited(capsys, monkeypatch):
    monkeypatch.setattr(resume, "BOUND_S", 1.0)
    start = time.perf_counter()
    out = _verdict(capsys, Hangs)
    assert out.startswith("❌ reading make_dataset(seed) without workers did not finish within 1 s"), out
    assert time.perf_counter() - start < 30  # the 1 s bound + 29 s of margin; unbounded: 3600 s
