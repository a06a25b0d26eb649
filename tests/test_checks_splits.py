"""Lab 02 checker: full, reshuffled training batches; every validation sample once, fixed order."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, SequentialSampler

from loaderlab.checks.lab02 import check_split_loaders
from loaderlab.labs.lab02 import split_datasets


def _line(capsys) -> str:
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    return lines[0]


def batch_sampler_route(train_set, val_set, batch_size):
    """Correct: an explicit BatchSampler over a RandomSampler; validation in bigger batches."""
    batches = BatchSampler(RandomSampler(train_set), batch_size, drop_last=True)
    return DataLoader(train_set, batch_sampler=batches), DataLoader(val_set, batch_size=2 * batch_size)


def seeded_sampler_route(train_set, val_set, batch_size):
    """Correct: a seeded RandomSampler (its generator moves on every epoch), a SequentialSampler."""
    order = RandomSampler(train_set, generator=torch.Generator().manual_seed(1))
    return (
        DataLoader(train_set, batch_size=batch_size, sampler=order, drop_last=True),
        DataLoader(val_set, batch_size=7, sampler=SequentialSampler(val_set)),
    )


def _good_val(val_set, batch_size):
    return DataLoader(val_set, batch_size=batch_size)


WRONG = {
    "no drop_last": (
        lambda tr, va, bs: (DataLoader(tr, bs, shuffle=True), _good_val(va, bs)),
        "last batch holds 1 sample(s) (65 = 2 × 32 + 1)",
    ),
    "order fixed once": (
        lambda tr, va, bs: (
            DataLoader(tr, bs, sampler=torch.randperm(len(tr)).tolist(), drop_last=True),
            _good_val(va, bs),
        ),
        "both training epochs come in the same shuffled order",
    ),
    "not shuffled": (
        lambda tr, va, bs: (DataLoader(tr, bs, drop_last=True), _good_val(va, bs)),
        "yields the samples in index order",
    ),
    "with replacement": (
        lambda tr, va, bs: (
            DataLoader(
                tr,
                bs,
                drop_last=True,
                sampler=RandomSampler(tr, replacement=True, generator=torch.Generator().manual_seed(0)),
            ),
            _good_val(va, bs),
        ),
        "twice; a shuffled epoch of 65 samples",
    ),
    "validation shuffled": (
        lambda tr, va, bs: (
            DataLoader(tr, bs, shuffle=True, drop_last=True),
            DataLoader(va, bs, shuffle=True),
        ),
        "the validation order changes between passes",
    ),
    "validation drop_last": (
        lambda tr, va, bs: (
            DataLoader(tr, bs, shuffle=True, drop_last=True),
            DataLoader(va, bs, drop_last=True),
        ),
        "the validation loader drops 23 of its 23 samples (drop_last=True)",
    ),
    "swapped": (
        lambda tr, va, bs: (_good_val(va, bs), DataLoader(tr, bs, shuffle=True, drop_last=True)),
        "the train loader yields validation samples or the other way round",
    ),
}


@pytest.mark.parametrize("candidate", [batch_sampler_route, seeded_sampler_route])
def test_correct_answers_pass(candidate, capsys):
    assert check_split_loaders(candidate) is True
    assert _line(capsys).startswith("✅ train batches always full and reshuffled every epoch")


@pytest.mark.parametrize("name", WRONG)
def test_each_wrong_answer_gets_its_own_sentence(name, capsys):
    candidate, phrase = WRONG[name]
    assert check_split_loaders(candidate) is False
    line = _line(capsys)
    assert line.startswith("❌") and phrase in line, line


def test_the_sentences_differ():
    assert len({phrase for _, phrase in WRONG.values()}) == len(WRONG)


def test_stub_and_raising_answers(capsys):
    def stub(train_set, val_set, batch_size):
        raise NotImplementedError("your code here")

    def both_shuffle_and_sampler(train_set, val_set, batch_size):
        return DataLoader(train_set, batch_size, shuffle=True, sampler=[0]), None

    assert check_split_loaders(stub) is False
    assert _line(capsys) == "⏳ not attempted yet"
    assert check_split_loaders(both_shuffle_and_sampler) is False
    assert _line(capsys).startswith("❌ your code raised ValueError: sampler option is mutually exclusive")


def test_the_datasets_trace_every_sample():
    train_set, val_set = split_datasets()
    assert train_set.tensors[1].tolist() == list(range(65))
    assert val_set.tensors[1].tolist() == list(range(1000, 1023))
