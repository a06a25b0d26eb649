"""Lab 05 checkers: wrong padding collates and wrong bucketing plans are rejected with their reason."""

from __future__ import annotations

import importlib.util
import random

import pytest
import torch
from course_code import ROOT

# The correct answers are the code notebook 05 built: its lesson module and its sampler snippet.
from lesson05_pad_collate import pad_collate  # notebooks/ is on pytest's pythonpath (pyproject)
from torch.nn.utils.rnn import pad_sequence

from loaderlab.checks.lab05 import (
    bucket_check_lengths,
    check_bucket_batches,
    check_pad_collate,
    expected_pad,
    pad_check_samples,
)
from loaderlab.checks.report import CheckerTypeError
from loaderlab.collate import padding_waste

_spec = importlib.util.spec_from_file_location(
    "snippet_bucketing", ROOT / "docs" / "snippets" / "bucketing.py"
)
_bucketing = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bucketing)
BucketBatchSampler = _bucketing.BucketBatchSampler


def _line(capsys) -> str:
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    return lines[0]


# ------------------------------------------------------------------------------ pad_collate


def loop_collate(batch):
    # a different correct answer: explicit loop, the padding mask filled True then cleared
    width = max(len(tokens) for tokens, _ in batch)
    padded = torch.zeros(len(batch), width, dtype=torch.long)
    padding_mask = torch.ones(len(batch), width, dtype=torch.bool)
    for row, (tokens, _) in enumerate(batch):
        padded[row, : len(tokens)] = tokens
        padding_mask[row, : len(tokens)] = False
    return padded, padding_mask, torch.tensor([label for _, label in batch])


def _parts(batch):
    return [tokens for tokens, _ in batch], [label for _, label in batch]


def fixed_length(batch):
    tokens, labels = _parts(batch)
    padded = torch.zeros(len(batch), 16, dtype=torch.long)
    for row, t in enumerate(tokens):
        padded[row, : len(t)] = t
    return padded, padded == 0, torch.tensor(labels)


def left_padding(batch):
    tokens, labels = _parts(batch)
    padded = pad_sequence([t.flip(0) for t in tokens], batch_first=True).flip(1)
    lengths = torch.tensor([len(t) for t in tokens])
    mask = torch.arange(padded.shape[1]).flip(0) >= lengths[:, None]
    return padded, mask, torch.tensor(labels)


def pad_value(value):
    def collate(batch):
        tokens, labels = _parts(batch)
        padded = pad_sequence(tokens, batch_first=True, padding_value=value)
        lengths = torch.tensor([len(t) for t in tokens])
        return padded, torch.arange(padded.shape[1]) >= lengths[:, None], torch.tensor(labels)

    collate.__name__ = f"pad_value_{value}"
    return collate


def inverted_mask(batch):
    padded, mask, labels = pad_collate(batch)
    return padded, ~mask, labels


def mask_from_values(batch):
    padded, _, labels = pad_collate(batch)
    return padded, padded == 0, labels


def int_mask(batch):
    padded, mask, labels = pad_collate(batch)
    return padded, mask.long(), labels


def labels_as_list(batch):
    padded, mask, _ = pad_collate(batch)
    return padded, mask, [label for _, label in batch]


def float_padded(batch):
    padded, mask, labels = pad_collate(batch)
    return padded.float(), mask, labels


def float_mask(batch):
    padded, mask, labels = pad_collate(batch)
    return padded, mask.float(), labels


def time_major(batch):
    tokens, labels = _parts(batch)
    padded = pad_sequence(tokens)  # batch_first=False: [T, B]
    return padded, (padded == 0), torch.tensor(labels)


def first_length(batch):
    # assumes every sample is as long as the first (as if padded in __getitem__): truncates
    tokens, labels = _parts(batch)
    width = len(tokens[0])
    padded = torch.zeros(len(batch), width, dtype=torch.long)
    for row, t in enumerate(tokens):
        padded[row, : min(width, len(t))] = t[:width]
    return padded, torch.zeros_like(padded, dtype=torch.bool), torch.tensor(labels)


def stacks(batch):
    # assumes the samples were padded in __getitem__ already
    tokens, labels = _parts(batch)
    return torch.stack(tokens), None, torch.tensor(labels)


def two_outputs(batch):
    padded, _, labels = pad_collate(batch)
    return padded, labels


def pad_stub(batch):
    raise NotImplementedError("your code here")


def pad_raises(batch):
    raise IndexError("list index out of range")


@pytest.mark.parametrize("candidate", [pad_collate, loop_collate])
def test_correct_collates_pass(candidate, capsys, no_leaked_workers):
    assert check_pad_collate(candidate) is True
    line = _line(capsys)
    assert line.startswith("✅") and "2 workers" in line


@pytest.mark.parametrize(
    ("candidate", "phrase"),
    [
        (fixed_length, "16 tokens wide but the batch's longest sequence has 3"),
        (left_padding, "left padding"),
        (pad_value(-1), "pad positions hold [-1] instead of 0"),
        (pad_value(1), "pad positions hold [1] instead of 0"),
        (inverted_mask, "padding_mask is inverted: PyTorch's key_padding_mask is True at padding"),
        (mask_from_values, "computed from token values"),
        (labels_as_list, "labels come back as a list"),
        (float_padded, "padded has dtype torch.float32"),
        (float_mask, "padding_mask has dtype torch.float32"),
        (int_mask, "padding_mask has dtype torch.int64: use torch.bool"),
        (time_major, "i.e. [T, B]: pad with batch_first=True"),
        (first_length, "padded has shape (4, 2), expected (4, 3)"),
        (stacks, "your code raised RuntimeError: stack expects each tensor to be equal size"),
        (two_outputs, "returned a 2-tuple; return three things"),
    ],
)
def test_wrong_collates_fail_with_their_reason(candidate, phrase, capsys, no_leaked_workers):
    assert check_pad_collate(candidate) is False
    line = _line(capsys)
    assert line.startswith("❌") and phrase in line, line


def test_pad_stub_is_not_attempted(capsys):
    assert check_pad_collate(pad_stub) is False
    assert _line(capsys) == "⏳ not attempted yet"


def test_pad_raising_candidate_gets_one_line(capsys, no_leaked_workers):
    assert check_pad_collate(pad_raises) is False
    assert _line(capsys) == "❌ your code raised IndexError: list index out of range"


def test_a_value_instead_of_a_function_gets_one_sentence():
    with pytest.raises(CheckerTypeError, match=r"must be the function .* pass it without calling it"):
        check_pad_collate(pad_collate(pad_check_samples()[:4]))


def test_the_answer_key_agrees_with_the_lessons_pad_collate():
    samples = pad_check_samples()
    for i in range(0, 12, 4):
        for ours, key in zip(pad_collate(samples[i : i + 4]), expected_pad(samples[i : i + 4]), strict=True):
            assert torch.equal(ours, key)


def test_pad_check_samples_catch_value_masks_and_fixed_widths():
    samples = pad_check_samples()
    widths = [max(len(t) for t, _ in samples[i : i + 4]) for i in range(0, 12, 4)]
    assert widths == [3, 9, 7]
    for i in range(0, 12, 4):
        batch = samples[i : i + 4]
        assert len(batch[0][0]) < max(len(t) for t, _ in batch)  # the longest is never first
        padded, mask, _ = pad_collate(batch)
        assert not torch.equal(mask, padded == 0)  # a real 0 token in every batch


# --------------------------------------------------------------------------- bucket_batches


def _seeded(seed, epoch):
    return random.Random(seed * 1_000_003 + epoch)


def global_sort(lengths, batch_size, epoch, seed):
    rng = _seeded(seed, epoch)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    order.sort(key=lambda i: lengths[i])
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    rng.shuffle(batches)
    return batches


def course_sampler(lengths, batch_size, epoch, seed):
    # a different correct answer: notebook 05's BucketBatchSampler with pools of 64 batches
    sampler = BucketBatchSampler(lengths, batch_size, pool_size=64 * batch_size, seed=seed * 1000)
    sampler.set_epoch(epoch)
    return list(sampler)


def sorted_no_shuffle(lengths, batch_size, epoch, seed):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def same_every_epoch(lengths, batch_size, epoch, seed):
    return global_sort(lengths, batch_size, 0, seed)


def ignores_seed(lengths, batch_size, epoch, seed):
    return global_sort(lengths, batch_size, epoch, 0)


def global_random(lengths, batch_size, epoch, seed):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    random.shuffle(batches)
    return batches


def random_batches(lengths, batch_size, epoch, seed):
    order = list(range(len(lengths)))
    _seeded(seed, epoch).shuffle(order)
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def small_pools(lengths, batch_size, epoch, seed):
    sampler = BucketBatchSampler(lengths, batch_size, pool_size=8 * batch_size, seed=seed * 1000)
    sampler.set_epoch(epoch)
    return list(sampler)


def drops_remainder(lengths, batch_size, epoch, seed):
    return [b for b in global_sort(lengths, batch_size, epoch, seed) if len(b) == batch_size]


def fills_last_batch(lengths, batch_size, epoch, seed):
    batches = global_sort(lengths, batch_size, epoch, seed)
    for b in batches:
        while len(b) < batch_size:
            b.append(b[0])
    return batches


def merges_remainder(lengths, batch_size, epoch, seed):
    n = len(lengths) // batch_size * batch_size
    batches = global_sort(lengths[:n], batch_size, epoch, seed)
    batches[-1] = batches[-1] + list(range(n, len(lengths)))
    return batches


def flat_list(lengths, batch_size, epoch, seed):
    return [i for b in global_sort(lengths, batch_size, epoch, seed) for i in b]


def bucket_stub(lengths, batch_size, epoch, seed):
    raise NotImplementedError("your code here")


def bucket_raises(lengths, batch_size, epoch, seed):
    return lengths.argsort()  # lengths is a list


@pytest.mark.parametrize("candidate", [global_sort, course_sampler])
def test_correct_bucketing_passes(candidate, capsys):
    assert check_bucket_batches(candidate) is True
    line = _line(capsys)
    assert line.startswith("✅") and "padding (limit 15%)" in line


@pytest.mark.parametrize(
    ("candidate", "phrase"),
    [
        (sorted_no_shuffle, "sorted by length"),
        (same_every_epoch, "epoch 0 and epoch 1 give identical batches"),
        (ignores_seed, "the seed is ignored"),
        (global_random, "same epoch and seed gave different batches"),
        (random_batches, "pads 76% of all tokens"),
        (small_pools, "the limit is 15%"),
        (drops_remainder, "leaves out 3 of 13 indices"),
        (fills_last_batch, "more than once"),
        (merges_remainder, "has a batch of 8 indices, more than batch_size=5"),
        (flat_list, "batch 0 is not a list of int indices"),
    ],
)
def test_wrong_bucketing_fails_with_its_reason(candidate, phrase, capsys):
    assert check_bucket_batches(candidate) is False
    line = _line(capsys)
    assert line.startswith("❌") and phrase in line, line


@pytest.mark.course
def test_bucket_stub_and_raising_candidate(capsys):
    assert check_bucket_batches(bucket_stub) is False
    assert _line(capsys) == "⏳ not attempted yet"
    assert check_bucket_batches(bucket_raises) is False
    assert _line(capsys) == "❌ your code raised AttributeError: 'list' object has no attribute 'argsort'"


def test_bucket_lengths_leave_room_between_sorting_and_random_batches():
    lengths = bucket_check_lengths()
    assert len(lengths) % 32 and max(lengths) > 10 * sorted(lengths)[len(lengths) // 2]
    assert padding_waste(global_sort(lengths, 32, 0, 0), lengths) < 0.10
    assert padding_waste(random_batches(lengths, 32, 0, 0), lengths) > 0.5
