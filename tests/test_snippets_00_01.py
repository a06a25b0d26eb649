"""The snippets shown in notebooks 00 and 01 ("In your own code") do what the notebooks say."""

from __future__ import annotations

import torch
from course_code import snippet
from torch.utils.data import TensorDataset


def _dataset(n: int = 20) -> TensorDataset:
    return TensorDataset(torch.arange(n, dtype=torch.float32)[:, None], torch.arange(n) % 3)


def _ids(loader) -> list[list[int]]:
    return [xb[:, 0].long().tolist() for xb, _ in loader]


def test_first_loader_is_shuffled_reproducible_and_the_same_with_workers(no_leaked_workers):
    first_loader = snippet("first_loader")
    dataset = _dataset()
    no_workers = _ids(first_loader.make_train_loader(dataset, batch_size=8, num_workers=0, seed=3))
    again = _ids(first_loader.make_train_loader(dataset, batch_size=8, num_workers=0, seed=3))
    with_workers = _ids(first_loader.make_train_loader(dataset, batch_size=8, num_workers=2, seed=3))
    other_seed = _ids(first_loader.make_train_loader(dataset, batch_size=8, num_workers=0, seed=4))
    flat = [i for batch in no_workers for i in batch]
    assert sorted(flat) == list(range(20)) and flat != list(range(20))
    assert [len(b) for b in no_workers] == [8, 8, 4]
    assert no_workers == again == with_workers and other_seed != no_workers


def test_train_one_epoch_steps_on_every_batch():
    first_loader = snippet("first_loader")
    seen = []
    loader = first_loader.make_train_loader(_dataset(), batch_size=8, num_workers=0)
    first_loader.train_one_epoch(loader, lambda xb, yb: seen.append(len(xb)))
    assert seen == [8, 8, 4]


def test_same_order_loader_yields_the_hand_written_loops_batches():
    loop_to_loader = snippet("loop_to_loader")
    dataset = _dataset(10)
    order = [3, 9, 0, 4, 7, 1, 8, 2, 6, 5]
    by_hand = [[order[i] for i in range(start, min(start + 4, 10))] for start in range(0, 10, 4)]
    assert _ids(loop_to_loader.same_order_loader(dataset, order, batch_size=4)) == by_hand


def test_overlapping_loader_shuffles_reproducibly_with_or_without_workers(no_leaked_workers):
    loop_to_loader = snippet("loop_to_loader")
    dataset = _dataset()
    with_workers = _ids(loop_to_loader.overlapping_loader(dataset, batch_size=8, num_workers=2, seed=1))
    no_workers = _ids(loop_to_loader.overlapping_loader(dataset, batch_size=8, num_workers=0, seed=1))
    flat = [i for batch in with_workers for i in batch]
    assert with_workers == no_workers and sorted(flat) == list(range(20)) and flat != list(range(20))
