"""Lab 07 checker: each wrong seeded Dataset rejected for its own reason, right ones accepted.

The answers are the lab's ``Augmented`` (written by the solution's %%writefile lab07.py cell) with
``generator()`` or ``__getstate__`` written another way."""

from __future__ import annotations

import importlib
import os
import time

import numpy as np
import pytest
import torch
from torch.utils.data import ConcatDataset, Dataset, get_worker_info

from loaderlab.checks import lab07 as seeding
from loaderlab.checks.lab07 import SECTION, check_seeded_dataset, draws, repeats, repeats_across

# solutions/ is on pytest's pythonpath (pyproject), so spawned workers, which import lab07 by
# name, find it too
Augmented = importlib.import_module("lab07").Augmented

pytestmark = pytest.mark.usefixtures("no_leaked_workers")


def verdict(capsys, candidate) -> tuple[bool, str]:
    ok = check_seeded_dataset(candidate)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "Traceback" not in out, out
    return ok, out.strip()


# ------------------------------------------------------------------ student answers


def _seed_here():
    info = get_worker_info()
    return info.seed if info is not None else torch.initial_seed()


class SeedSequenceMix(Augmented):  # right too: mixes the two seeds another way, rebuilt on change
    def generator(self):
        seed = _seed_here()
        if seed != self.rng_seed:
            state = np.random.SeedSequence(entropy=seed, spawn_key=(self.seed,))
            self.rng, self.rng_seed = np.random.Generator(np.random.PCG64(state)), seed
        return self.rng


class HeldFromInit(Augmented):  # the pitfall: the generator made in __init__, copied to each worker
    def __init__(self, n=16, seed=0):
        super().__init__(n, seed)
        self.rng = np.random.default_rng(seed)

    def generator(self):
        return self.rng


class BuiltOnce(Augmented):  # built on first use only: a draw in the main process reaches the workers
    def generator(self):
        if self.rng is None:
            self.rng = np.random.default_rng([_seed_here(), self.seed])
        return self.rng


class RebuiltEveryDraw(Augmented):
    def generator(self):
        return np.random.default_rng([_seed_here(), self.seed])


class WorkerIdOnly(Augmented):
    def generator(self):
        info = get_worker_info()
        key = info.id if info is not None else 0
        if key != self.rng_seed:
            self.rng, self.rng_seed = np.random.default_rng([key, self.seed]), key
        return self.rng


class WorkerSeedOnly(Augmented):  # no own seed: two datasets in one worker draw the same stream
    def generator(self):
        seed = _seed_here()
        if seed != self.rng_seed:
            self.rng, self.rng_seed = np.random.default_rng(seed), seed
        return self.rng


class NoMainProcess(Augmented):
    def generator(self):
        info = get_worker_info()
        if info.seed != self.rng_seed:
            self.rng, self.rng_seed = np.random.default_rng([info.seed, self.seed]), info.seed
        return self.rng


class FromClock(Augmented):
    def generator(self):
        seed = _seed_here()
        if seed != self.rng_seed:
            self.rng, self.rng_seed = np.random.default_rng([time.time_ns(), self.seed]), seed
        return self.rng


class FromUrandom(Augmented):
    def generator(self):
        seed = _seed_here()
        if seed != self.rng_seed:
            entropy = int.from_bytes(os.urandom(8), "little")
            self.rng, self.rng_seed = np.random.default_rng([entropy, self.seed]), seed
        return self.rng


class SendsItsGenerator(Augmented):  # right in workers, but pickles its generator (spawn would get it)
    def __getstate__(self):
        return dict(self.__dict__)


class Typo(Augmented):
    def generator(self):
        seed = _seed_here()
        if seed != self.rng_seed:
            self.rng, self.rng_seed = np.random.default_rng([seed, self.sed]), seed
        return self.rng


class Stub(Augmented):
    def generator(self):
        raise NotImplementedError("your code here")


class StubGetstate(Augmented):  # generator() written, __getstate__ still the lab's stub
    def __getstate__(self):
        raise NotImplementedError("your code here")


class NoSeedArgument(Dataset):
    def __init__(self, n):
        self.n = n


class WrongRows(Augmented):
    def __getitem__(self, index):
        return float(self.generator().random())


# ------------------------------------------------------------------------- checker


@pytest.mark.course
@pytest.mark.parametrize("candidate", [Augmented, SeedSequenceMix])
def test_the_recipe_is_accepted(capsys, candidate):
    ok, out = verdict(capsys, candidate)
    assert ok and out.startswith("✅ 2 workers drew 32 distinct values"), out


@pytest.mark.course
@pytest.mark.parametrize(
    ("candidate", "phrase", "section"),
    [
        (HeldFromInit, "the two workers drew the same values (8 of 16 values repeated within an epoch)", 3),
        (BuiltOnce, "the two workers drew the same values", 3),
        (RebuiltEveryDraw, "in the main process (num_workers=0) 31 of 32 values repeated", 4),
        (WorkerIdOnly, "16 of 16 values of epoch 2 repeated epoch 1", 1),
        (WorkerSeedOnly, "two datasets with different seeds, joined by a ConcatDataset", 4),
        (FromClock, "two runs with DataLoader(generator=torch.Generator().manual_seed(0)) drew different", 6),
        (FromUrandom, "your seed is not the loader's", 6),
        (SendsItsGenerator, "still carries its generator (rng)", 5),
    ],
)
def test_wrong_seeding_is_rejected_with_its_reason(capsys, candidate, phrase, section):
    ok, out = verdict(capsys, candidate)
    assert not ok and out.startswith("❌") and phrase in out, out
    assert out.endswith(f"Hint: notebook 07, section {SECTION[section]}."), out


@pytest.mark.course
def test_stubs_are_pending_and_a_crash_is_one_line(capsys):
    assert verdict(capsys, Stub) == (False, "⏳ not attempted yet")
    assert verdict(capsys, StubGetstate) == (False, "⏳ not attempted yet")
    assert verdict(capsys, None) == (False, "⏳ not attempted yet")
    ok, out = verdict(capsys, Typo)
    # Python 3.12+ adds "Did you mean: 'seed'?" to the same one line
    assert not ok and out.startswith(
        "❌ your code raised AttributeError: 'Typo' object has no attribute 'sed'"
    ), out


class Forever(Augmented):
    def generator(self):
        while True:
            pass


def test_an_answer_that_never_returns_is_one_sentence_not_a_hang(capsys, monkeypatch):
    monkeypatch.setattr(seeding, "MAIN_BOUND_S", 0.3)
    ok, out = verdict(capsys, Forever)
    assert not ok and out.startswith("❌ 32 draws in the main process took more than 0 s"), out


def test_the_main_process_failure_names_the_fallback(capsys):
    ok, out = verdict(capsys, NoMainProcess)  # fails before any worker starts
    assert not ok and "get_worker_info() is None" in out and "fall back to torch.initial_seed()" in out, out
    assert out.endswith(f"Hint: notebook 07, section {SECTION[4]}."), out


@pytest.mark.parametrize(
    ("candidate", "phrase"),
    [
        (lambda n, seed=0: Augmented(n, seed), "needs your Dataset class (from lab07.py), got function"),
        (list, "needs your Dataset class (from lab07.py), got list"),
        (NoSeedArgument, "keep the lab's __init__(self, n, seed)"),
        (WrongRows, "must be a float64 tensor [index, worker, draw]"),
    ],
    ids=["function", "list", "no-seed-argument", "wrong-rows"],
)
def test_a_candidate_that_is_not_the_labs_dataset_is_one_sentence(capsys, candidate, phrase):
    ok, out = verdict(capsys, candidate)
    assert not ok and out.startswith("❌") and phrase in out, out


def test_an_instance_is_refused_as_a_call():
    with pytest.raises(TypeError, match="`dataset_class` must be the function .* without calling it"):
        check_seeded_dataset(Augmented(16))


# ------------------------------------------------------------------------- helpers


def test_repeats_are_counted_exactly():
    rows = torch.tensor([[0, 0, 0.5], [1, 0, 0.25], [2, 1, 0.5], [3, 1, 0.5]], dtype=torch.float64)
    assert repeats(rows) == [(0, 2), (0, 3)]
    assert repeats_across(rows, rows[2:]) == 2


def test_draws_in_the_main_process_follow_torch_initial_seed():
    with torch.random.fork_rng():  # the test process's own generator is left as it was
        torch.manual_seed(3)
        first = draws(Augmented(8), epochs=2, workers=0)
        torch.manual_seed(3)
        again = draws(Augmented(8), epochs=2, workers=0)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not repeats(torch.cat(first)) and (first[0][:, 1] == -1).all()


@pytest.mark.course
def test_draws_count_the_held_generators_duplicates_exactly():
    held = draws(HeldFromInit(16), epochs=2)
    assert [len(repeats(rows)) for rows in held] == [8, 8]  # worker 1 replays worker 0
    assert repeats_across(*held) == 16  # and each epoch replays the first
    assert held[0][:, 1].tolist().count(0) == held[0][:, 1].tolist().count(1) == 8
    kept = draws(Augmented(16), epochs=2, persistent=True)
    assert not repeats(torch.cat(kept))
    assert not torch.equal(draws(Augmented(16), seed=1)[0], draws(Augmented(16), seed=2)[0])


@pytest.mark.course
def test_the_recipe_with_one_seed_twice_repeats_in_a_concat_dataset():
    same = draws(ConcatDataset([Augmented(8, seed=5), Augmented(8, seed=5)]))[0]
    assert len(repeats(same)) == 8  # each worker: 4 draws from each half, the second replays the first
