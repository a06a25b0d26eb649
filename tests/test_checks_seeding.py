"""Lab 07 checker: each wrong worker_init_fn rejected for its own reason, right ones accepted,
on the lab's dataset (notebook 07's HeldRng, from notebooks/lesson07.py)."""

from __future__ import annotations

import os
import random
import time

import numpy as np
import pytest
import torch
from course_code import lesson
from torch.utils.data import Subset, get_worker_info

from loaderlab.checks.seeding import check_worker_init_fn, seeding_run

pytestmark = pytest.mark.usefixtures("no_leaked_workers")


def lab_dataset():
    return lesson("lesson07").HeldRng(16)


def verdict(capsys, candidate, dataset=None) -> tuple[bool, str]:
    ok = check_worker_init_fn(candidate, lab_dataset() if dataset is None else dataset)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "Traceback" not in out, out
    return ok, out.strip()


# ------------------------------------------------------------------ student answers


def from_worker_seed(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)


def from_initial_seed(worker_id):  # a different right answer: torch.initial_seed() == info.seed
    get_worker_info().dataset.rng = np.random.default_rng([worker_id, torch.initial_seed()])


def reseed_in_place(worker_id):  # right too: the same Generator object, a new state
    info = get_worker_info()
    info.dataset.rng.bit_generator.state = np.random.PCG64(info.seed).state


def no_reseed(worker_id):
    pass


def worker_id_only(worker_id):
    get_worker_info().dataset.rng = np.random.default_rng(worker_id)


def global_numpy(worker_id):  # the popular advice (C15), applied to the wrong generator
    seed = torch.initial_seed() % 2**32
    np.random.seed(seed)
    random.seed(seed)


def constant(worker_id):
    get_worker_info().dataset.rng = np.random.default_rng(1234)


def from_clock(worker_id):
    get_worker_info().dataset.rng = np.random.default_rng(time.time_ns() + worker_id)


def from_urandom(worker_id):
    get_worker_info().dataset.rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))


def rebinds_a_local(worker_id):  # reseeds a local name: the dataset keeps its copy
    rng = get_worker_info().dataset.rng
    rng = np.random.default_rng(get_worker_info().seed)  # noqa: F841


def typo(worker_id):
    get_worker_info().datset.rng = None


def stub(worker_id):
    raise NotImplementedError("your code here")


# ------------------------------------------------------------------------- checker


@pytest.mark.course
@pytest.mark.parametrize("candidate", [from_worker_seed, from_initial_seed, reseed_in_place])
def test_seeds_from_the_loader_are_accepted(capsys, candidate):
    ok, out = verdict(capsys, candidate)
    assert ok and out.startswith("✅ 2 workers drew 32 distinct values"), out


@pytest.mark.course
@pytest.mark.parametrize(
    ("candidate", "phrase"),
    [
        (no_reseed, "dataset.rng was not reseeded"),
        (rebinds_a_local, "dataset.rng was not reseeded"),
        (global_numpy, "you seeded NumPy's global generator (np.random)"),
        (constant, "both workers got the same seed (a constant?)"),
        (worker_id_only, "the values repeat from one epoch to the next"),
        (from_clock, "not reproducible"),
        (from_urandom, "not reproducible"),
    ],
)
def test_wrong_seeding_is_rejected_with_its_reason(capsys, candidate, phrase):
    ok, out = verdict(capsys, candidate)
    assert not ok and out.startswith("❌") and phrase in out, out


@pytest.mark.course
def test_stub_is_pending_and_a_crash_is_one_line(capsys):
    assert verdict(capsys, stub) == (False, "⏳ not attempted yet")
    ok, out = verdict(capsys, typo)
    # Python 3.12+ adds "Did you mean: 'dataset'?" to the same one line
    assert not ok and out.startswith("❌ your code raised AttributeError: "
                                     "'WorkerInfo' object has no attribute 'datset'"), out
    assert len(out.splitlines()) == 1, out


@pytest.mark.parametrize("dataset", ["HeldRng", Subset(list(range(16)), range(16)), [0.5] * 16],
                         ids=["a-string", "subset-without-rng", "list"])
def test_a_dataset_other_than_the_labs_is_one_sentence(capsys, dataset):
    ok, out = verdict(capsys, from_worker_seed, dataset=dataset)
    assert not ok and out.startswith("❌") and "lab's" in out, out


# ------------------------------------------------------------------------- helpers


def test_seeding_run_counts_the_duplicates_exactly():
    broken = seeding_run(None, lab_dataset())
    assert broken.duplicates_within_epochs() == 16  # 8 per epoch: worker 1 replays worker 0
    assert broken.duplicates_across_epochs() == 16  # epoch 2 replays epoch 1 entirely
    assert broken.workers[0].count(0) == broken.workers[0].count(1) == 8
    fixed = seeding_run(from_worker_seed, lab_dataset(), persistent_workers=True)
    assert fixed.duplicates_within_epochs() == fixed.duplicates_across_epochs() == 0
    assert fixed.rng_changed and not fixed.np_changed
    assert (seeding_run(from_worker_seed, lab_dataset(), seed=1).values
            != seeding_run(from_worker_seed, lab_dataset(), seed=2).values)


def test_the_values_are_the_lab_datasets_draws():
    dataset = lab_dataset()
    run = seeding_run(None, dataset, epochs=1)
    first_two = np.random.default_rng(0).random(2).tolist()  # each worker's copy of default_rng(0)
    assert run.values[0][:2] == first_two and run.values[0][2:4] == first_two  # batch 0: worker 0, batch 1: 1
    with pytest.raises(ValueError, match="epochs"):
        seeding_run(None, dataset, epochs=0)
