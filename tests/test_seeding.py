"""Tests for loaderlab.seeding: probe Datasets, worker_init_fns, counters and epoch records."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data._utils.worker import _worker_loop

from loaderlab.seeding import (
    GENERATOR_KINDS,
    GlobalDraws,
    HeldGeneratorDraws,
    InheritedNumpyState,
    draw,
    generator_kind,
    make_generator,
    reseed_from_worker_info,
    seed_globals_from_initial_seed,
    source_lines,
)


def epoch_draws(loader: DataLoader, epochs: int = 3) -> list[torch.Tensor]:
    """One tensor per epoch: all samples of the loader's batches, in order."""
    return [torch.cat(list(loader)) for _ in range(epochs)]


def count_duplicates(values) -> int:
    """How many values equal a value seen before them (0 = all distinct)."""
    values = [float(v) for v in values]
    return len(values) - len(set(values))


def test_source_lines_quotes_the_worker_seeding():
    lines = source_lines(_worker_loop, ["seed = base_seed", "random.seed("])
    assert lines[0] == "seed = base_seed + worker_id"
    assert "random.seed(seed)" in lines and "np.random.seed(np_seed)" in [line.strip() for line in lines]
    with pytest.raises(ValueError, match="contains"):
        source_lines(_worker_loop, [])
    with pytest.raises(TypeError, match="function"):
        source_lines(3, "x")


@pytest.mark.parametrize("kind", GENERATOR_KINDS)
def test_generators_are_reproducible_per_seed(kind):
    a, b, c = make_generator(kind, 5), make_generator(kind, 5), make_generator(kind, 6)
    first = [draw(a) for _ in range(3)]
    assert first == [draw(b) for _ in range(3)] != [draw(c) for _ in range(3)]
    assert all(0.0 <= x < 1.0 for x in first) and generator_kind(a) == kind


def test_generator_helpers_validate():
    with pytest.raises(ValueError, match="kind"):
        make_generator("cupy", 0)
    with pytest.raises(ValueError, match="seed"):
        make_generator("numpy", -1)
    with pytest.raises(TypeError, match="rng"):
        generator_kind(np.random.RandomState(0))


def test_global_draws_do_not_repeat_across_workers_and_epochs(no_leaked_workers):
    loader = DataLoader(GlobalDraws(8), batch_size=2, num_workers=2)
    draws = torch.cat(epoch_draws(loader, epochs=2))
    assert draws.shape == (16, 5) and set(draws[:, 1].tolist()) == {0.0, 1.0}
    assert [count_duplicates(draws[:, i]) for i in (2, 3, 4)] == [0, 0, 0]


def test_inherited_numpy_state_makes_workers_repeat(no_leaked_workers):
    loader = DataLoader(GlobalDraws(8), batch_size=2, num_workers=2, worker_init_fn=InheritedNumpyState())
    draws = torch.cat(epoch_draws(loader, epochs=2))
    assert count_duplicates(draws[:, 3]) == 12  # 4 distinct numpy values among 16 draws
    assert count_duplicates(draws[:, 2]) == 0  # random is still seeded by torch


@pytest.mark.parametrize("kind", GENERATOR_KINDS)
def test_held_generators_repeat_and_the_reseeding_fixes_remove_it(kind, no_leaked_workers):
    def duplicates(init_fn):
        loader = DataLoader(HeldGeneratorDraws(8, kind), batch_size=2, num_workers=2, worker_init_fn=init_fn)
        return count_duplicates(torch.cat(epoch_draws(loader, epochs=2))[:, 2])

    assert duplicates(None) == 12
    assert duplicates(seed_globals_from_initial_seed) == 12
    assert duplicates(reseed_from_worker_info) == 0


def test_reseed_functions_refuse_the_main_process():
    with pytest.raises(RuntimeError, match="worker"):
        reseed_from_worker_info(0)


def test_seed_globals_from_initial_seed_seeds_random_and_numpy():
    torch.manual_seed(123)
    seed_globals_from_initial_seed(0)
    a = (random.random(), np.random.random())
    seed_globals_from_initial_seed(0)
    assert (random.random(), np.random.random()) == a


@pytest.mark.parametrize("kind", GENERATOR_KINDS)
def test_held_generator_pickles_to_an_exact_copy(kind):
    import pickle

    dataset = HeldGeneratorDraws(4, kind, seed=11)
    copy = pickle.loads(pickle.dumps(dataset))
    assert type(copy.rng) is type(dataset.rng)
    assert [float(copy[i][2]) for i in range(3)] == [float(dataset[i][2]) for i in range(3)]


def test_held_torch_generator_reaches_spawn_workers(no_leaked_workers):
    loader = DataLoader(HeldGeneratorDraws(4, "torch"), batch_size=2, num_workers=2,
                        multiprocessing_context="spawn")
    draws = torch.cat(epoch_draws(loader, epochs=1))
    assert count_duplicates(draws[:, 2]) == 2  # both workers drew the same two numbers
