"""Lab 09 checker: class-balanced per-sample weights for WeightedRandomSampler."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import torch

from loaderlab.checks.lab09 import check_balanced_weights, label_sets


def _verdict(capsys, candidate) -> str:
    ok = check_balanced_weights(candidate)
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1 and "Traceback" not in out, out
    assert ok == out.startswith("✅")
    return out


def inverse_count(labels):  # the lab's solution idea, written differently
    counts = collections.Counter(labels)
    return [1.0 / counts[y] for y in labels]


def sklearn_balanced(labels):  # n / (classes * count): another correct scale, as a NumPy array
    y = np.asarray(labels)
    counts = np.bincount(y)
    return len(y) / (len(counts) * counts[y])


def tensor_weights(labels):  # a 1-D tensor is accepted too
    y = torch.tensor(labels)
    return 1.0 / torch.bincount(y)[y].double()


@pytest.mark.parametrize("candidate", [inverse_count, sklearn_balanced, tensor_weights])
def test_correct_weights_are_accepted(capsys, candidate):
    out = _verdict(capsys, candidate)
    assert out.startswith("✅") and "equal probability" in out


def article_weights(labels):
    return [0.2 if y == 0 else 1.0 for y in labels]


def frequency(labels):
    counts = collections.Counter(labels)
    return [counts[y] / len(labels) for y in labels]


def per_class(labels):
    counts = collections.Counter(labels)
    return [1.0 / counts[c] for c in sorted(counts)]


def two_classes_only(labels):
    n0, n1 = labels.count(0), labels.count(1)
    return [1 / n0 if y == 0 else 1 / n1 for y in labels]


def third_class_ignored(labels):
    n0, n1 = labels.count(0), labels.count(1)
    return [{0: 1 / n0, 1: 1 / n1}.get(y, 0.0) for y in labels]


def integer_division(labels):
    counts = collections.Counter(labels)
    return [1 // counts[y] for y in labels]


def negative(labels):
    counts = collections.Counter(labels)
    return [-1.0 / counts[y] for y in labels]


def uniform(labels):
    return [1.0] * len(labels)


def sorts_in_place(labels):
    labels.sort()
    return inverse_count(labels)


def nested(labels):
    return [[w] for w in inverse_count(labels)]


@pytest.mark.parametrize(
    ("candidate", "phrase"),
    [
        (article_weights, "class 0: 0.64, class 1: 0.36 instead of 0.50 each"),
        (frequency, "grow with the class frequency"),
        (per_class, "2 weights for 100 labels"),
        (two_classes_only, "class 2: 0.09 instead of 0.33 each"),
        (third_class_ignored, "never draw class 2"),
        (integer_division, "integer division"),
        (negative, "negative weight"),
        (uniform, "class 0: 0.90, class 1: 0.10"),
        (sorts_in_place, "changed the labels list"),
        (nested, "shape (100, 1)"),
    ],
)
def test_wrong_weights_are_rejected_with_their_reason(capsys, candidate, phrase):
    out = _verdict(capsys, candidate)
    assert out.startswith("❌") and phrase in out, out
    assert "Hint: notebook 09, section '3." in out


def test_stub_is_not_attempted_and_a_crash_is_one_line(capsys):
    def stub(labels):
        raise NotImplementedError("your code here")

    def crashes(labels):
        return [1 / collections.Counter(labels)[y + 1] for y in labels]  # 1 / 0 on the last class

    assert _verdict(capsys, stub).startswith("⏳ not attempted yet")
    out = _verdict(capsys, crashes)
    assert out.startswith("❌ your code raised ZeroDivisionError")


def test_label_sets_include_a_single_sample_class_and_three_or_more_classes():
    sets = label_sets()
    assert any(1 in collections.Counter(s).values() for s in sets)
    assert max(len(set(s)) for s in sets) >= 3 and min(len(set(s)) for s in sets) == 2


def lab_loader(labels, weights):  # the lab's loader factory: 3000 seeded draws with replacement
    from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

    sampler = WeightedRandomSampler(
        weights, num_samples=3000, replacement=True, generator=torch.Generator().manual_seed(0)
    )
    return DataLoader(TensorDataset(torch.tensor(labels)), batch_size=500, sampler=sampler)


def test_the_labs_loader_draws_the_accepted_weights_and_shows_the_shares(capsys):
    ok = check_balanced_weights(inverse_count, lab_loader)
    out = capsys.readouterr().out
    assert ok and "your loader drew class shares [" in out and "for class sizes [20, 7, 3, 1]" in out
    shares = [float(s) for s in out.split("shares [")[1].split("]")[0].split(",")]
    assert len(shares) == 4 and all(abs(s - 0.25) < 0.05 for s in shares)  # balanced, as drawn


@pytest.mark.course
def test_a_broken_loader_factory_is_answered_in_one_sentence(capsys):
    def crashes(labels, weights):
        raise RuntimeError("boom")

    def not_a_loader(labels, weights):
        return [torch.tensor(labels)]

    for factory, phrase in ((crashes, "failed with RuntimeError: boom"), (not_a_loader, "returned list")):
        ok = check_balanced_weights(inverse_count, factory)
        out = capsys.readouterr().out
        assert not ok and len(out.strip().splitlines()) == 1 and phrase in out, out
