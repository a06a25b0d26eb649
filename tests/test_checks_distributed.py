"""Lab 10 checker: set_epoch in the training loop, exactly-once evaluation shards."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from loaderlab.checks.lab10 import check_ddp_epochs, reference_orders


def _verdict(capsys, *candidates) -> str:
    ok = check_ddp_epochs(*candidates)
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1 and "Traceback" not in out, out
    assert ok == out.startswith("✅")
    return out


def make_train(
    epoch_of=lambda e: e,
    shuffle=True,
    seed_of=lambda s: s,
    rank_of=lambda r: r,
    every_rank=True,
    drop_last=False,
    loader=True,
):
    """Return a train_orders built from DistributedSampler, with one knob turned wrong."""

    def train_orders(dataset_len, world_size, epochs, seed):
        dataset = TensorDataset(torch.arange(dataset_len))
        samplers = [
            DistributedSampler(
                dataset,
                num_replicas=world_size,
                rank=rank_of(r),
                shuffle=shuffle,
                seed=seed_of(seed),
                drop_last=drop_last,
            )
            for r in range(world_size)
        ]
        orders = []
        for epoch in range(epochs):
            per_rank = []
            for r, sampler in enumerate(samplers):
                if epoch_of is not None and (every_rank or r == 0):
                    sampler.set_epoch(epoch_of(epoch))
                if loader:
                    per_rank.append(
                        [i for (xb,) in DataLoader(dataset, batch_size=4, sampler=sampler) for i in xb]
                    )
                else:
                    per_rank.append(list(sampler))
            orders.append(per_rank)
        return orders

    return train_orders


def unpadded(dataset_len, world_size):
    return [list(range(r, dataset_len, world_size)) for r in range(world_size)]


def strided_tensors(dataset_len, world_size):  # a different correct split, as tensors
    return [torch.arange(r, dataset_len, world_size) for r in range(world_size)]


def balanced_blocks(dataset_len, world_size):  # contiguous blocks, sizes differ by at most one
    base, extra = divmod(dataset_len, world_size)
    starts = [r * base + min(r, extra) for r in range(world_size + 1)]
    return [list(range(starts[r], starts[r + 1])) for r in range(world_size)]


def padded(dataset_len, world_size):
    return [
        list(DistributedSampler(range(dataset_len), world_size, r, shuffle=False)) for r in range(world_size)
    ]


def padded_shuffled(dataset_len, world_size):
    return [list(DistributedSampler(range(dataset_len), world_size, r)) for r in range(world_size)]


def dropped(dataset_len, world_size):
    return [
        list(DistributedSampler(range(dataset_len), world_size, r, drop_last=True)) for r in range(world_size)
    ]


def unsharded(dataset_len, world_size):
    return [list(range(dataset_len)) for _ in range(world_size)]


def ceil_blocks(dataset_len, world_size):
    k = -(-dataset_len // world_size)
    return [list(range(r * k, min(dataset_len, (r + 1) * k))) for r in range(world_size)]


def one_list(dataset_len, world_size):
    return list(range(dataset_len))


def test_correct_loops_are_accepted(capsys):
    out = _verdict(capsys, make_train())
    assert out.startswith("✅") and "now write eval_indices" in out
    out = _verdict(capsys, make_train(), unpadded)
    assert "true accuracy 0.30, a padded sampler would report 0.42" in out
    for train, evaluate in [
        (make_train(loader=False, drop_last=True), strided_tensors),
        (make_train(), balanced_blocks),
    ]:
        assert _verdict(capsys, train, evaluate).startswith("✅")


@pytest.mark.course
@pytest.mark.parametrize(
    ("train", "phrase"),
    [
        (make_train(epoch_of=None), "all 3 epochs repeat the same order"),
        (make_train(epoch_of=lambda e: 0), "all 3 epochs repeat the same order"),
        (make_train(epoch_of=lambda e: 42), "a constant is as good as none"),
        (make_train(every_rank=False), "rank 1 repeats its epoch-0 order"),
        (make_train(shuffle=False), "not shuffled"),
        (make_train(seed_of=lambda s: 0), "ignore seed=5"),
        (make_train(rank_of=lambda r: 0), "every rank sees the same indices"),
        (make_train(epoch_of=lambda e: e + 1), "after set_epoch(0) yields"),
    ],
)
def test_wrong_training_loops_are_rejected_with_their_reason(capsys, train, phrase):
    out = _verdict(capsys, train, unpadded)
    assert out.startswith("❌") and phrase in out, out
    assert "Hint: notebook 10" in out


@pytest.mark.course
@pytest.mark.parametrize(
    ("evaluate", "phrase"),
    [
        (padded, "DistributedSampler pads the shards"),
        (padded_shuffled, "12 evaluations for 10 samples"),
        (dropped, "drop_last=True drops the last 2 samples"),
        (unsharded, "every rank evaluates all 10 samples"),
        (ceil_blocks, "differ by at most one"),
        (one_list, "one list of indices per rank"),
    ],
)
def test_wrong_evaluations_are_rejected_with_their_reason(capsys, evaluate, phrase):
    out = _verdict(capsys, make_train(), evaluate)
    assert out.startswith("❌") and phrase in out, out
    assert "section '4. Padding skews an evaluation metric'" in out


@pytest.mark.course
def test_batches_instead_of_indices_are_named(capsys):
    def batches(dataset_len, world_size, epochs, seed):
        return [
            [
                list(
                    DataLoader(
                        range(dataset_len),
                        batch_size=4,
                        sampler=DistributedSampler(range(dataset_len), world_size, r),
                    )
                )
                for r in range(world_size)
            ]
            for _ in range(epochs)
        ]

    assert "flatten the loader's batches" in _verdict(capsys, batches)


@pytest.mark.course
def test_stubs_are_not_attempted_and_a_crash_is_one_line(capsys):
    def stub(*args):
        raise NotImplementedError("your code here")

    def crashes(dataset_len, world_size, epochs, seed):
        return DistributedSampler(range(dataset_len))  # no process group: ValueError/RuntimeError

    assert _verdict(capsys, stub).startswith("⏳ not attempted yet")
    assert _verdict(capsys, make_train(), stub).startswith("⏳ not attempted yet")
    out = _verdict(capsys, crashes)
    assert out.startswith("❌ your code raised") and "process group" in out


def test_reference_orders_shuffle_per_epoch_and_shard_per_rank():
    orders = reference_orders(10, 3, 2, seed=0)
    assert orders[0] != orders[1]
    assert all(set(sum(epoch, [])) == set(range(10)) for epoch in orders)
    assert [len(shard) for shard in orders[0]] == [4, 4, 4]
