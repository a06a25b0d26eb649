"""Notebook 07's lesson modules (notebooks/lesson07_draws*.py, written by its %%writefile cells): a
generator held by the Dataset repeats in every worker, reseed_worker fixes it only unwrapped,
LazyRng builds its generator in each worker (wrapped or not, torch.Generator under spawn too),
and the notebook's snippet is that same class."""

from __future__ import annotations

import pytest
import torch
from course_code import ROOT, lesson
from torch.utils.data import ConcatDataset, DataLoader, Subset

pytestmark = pytest.mark.usefixtures("no_leaked_workers")


def repeats(dataset, worker_init_fn=None, epochs=2, **kwargs) -> int:
    loader = DataLoader(dataset, batch_size=2, num_workers=2, worker_init_fn=worker_init_fn, **kwargs)
    draws = torch.cat([batch for _ in range(epochs) for batch in loader])[:, 2].tolist()
    return len(draws) - len(set(draws))


@pytest.mark.course
def test_a_held_generator_repeats_and_reseed_worker_fixes_it_only_unwrapped():
    l7 = lesson("lesson07_draws")
    assert repeats(l7.HeldRng(12)) == 18  # all but worker 0's first 6 draws
    assert repeats(l7.HeldRng(12), l7.reseed_worker) == 0
    assert repeats(l7.HeldRng(12), l7.seed_globals) == 18
    assert repeats(l7.HeldRng(12), l7.seed_from_worker_id) == 18  # reseeds torch's global generator only
    assert repeats(Subset(l7.HeldRng(12), range(12)), l7.reseed_worker) == 18  # lands on the Subset


@pytest.mark.course
@pytest.mark.parametrize("kind", ["numpy", "random", "torch"])
def test_lazy_rng_draws_differ_wrapped_or_not(kind):
    LazyRng = lesson("lesson07_lazy_rng").LazyRng
    assert repeats(LazyRng(12, kind)) == 0
    assert repeats(Subset(LazyRng(12, kind), range(12))) == 0
    assert repeats(ConcatDataset([LazyRng(6, kind, seed=1), LazyRng(6, kind, seed=2)])) == 0
    # same own seed: 2 per worker, epoch
    assert repeats(ConcatDataset([LazyRng(6, kind), LazyRng(6, kind)])) == 8


@pytest.mark.spawn
@pytest.mark.course
def test_lazy_rng_is_keyed_on_the_worker_seed_so_a_main_process_draw_does_not_travel(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "notebooks"))  # spawned workers import lesson07_lazy_rng by name
    LazyRng = lesson("lesson07_lazy_rng").LazyRng
    dataset = LazyRng(12, "torch")
    dataset[0]  # builds a torch.Generator in the main process
    assert dataset.rng is not None and dataset.__getstate__()["rng"] is None
    loader = DataLoader(dataset, batch_size=2, num_workers=2, multiprocessing_context="spawn")
    draws = torch.cat(list(loader))[:, 2].tolist()
    assert len(set(draws)) == 12


def test_the_snippet_is_the_lesson_class_for_numpy():
    lazy = (ROOT / "notebooks" / "lesson07_lazy_rng.py").read_text()
    snippet = (ROOT / "docs" / "snippets" / "worker_seeding.py").read_text()
    for line in (
        "        seed = info.seed if info is not None else torch.initial_seed()",
        "        if seed != self.rng_seed:  # first draw in this worker (a new worker, a new seed)",
        "    def __getstate__(self):  # workers build their own generator: never send one",
        '        return {**self.__dict__, "rng": None, "rng_seed": None}',
    ):
        assert line in lazy and line in snippet, line


def test_one_epoch_each_returns_the_batches_or_the_error_as_text():
    one_epoch_each = lesson("lesson07_one_epoch").one_epoch_each

    class Broken(torch.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, index):
            if index == 2:
                raise KeyError("sample 2")
            return torch.tensor(index)

    report = one_epoch_each(
        {"ok": DataLoader(list(range(4)), batch_size=2), "broken": DataLoader(Broken(), batch_size=2)}
    )
    assert [b.tolist() for b in report["ok"]["batches"]] == [[0, 1], [2, 3]] and report["ok"]["error"] is None
    assert [b.tolist() for b in report["broken"]["batches"]] == [[0, 1]]
    assert report["broken"]["error"] == "KeyError: 'sample 2'"
