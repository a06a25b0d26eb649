"""Exact checks of loaderlab.sampling: every expected value is computed by hand, no sampling luck."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

from loaderlab.sampling import (
    batch_class_fractions,
    class_balanced_weights,
    class_counts,
    distinct_per_class,
    drawn_indices,
    expected_class_fractions,
    expected_distinct,
    per_sample_weights,
)

LABELS = torch.tensor([0] * 9 + [1])  # a 90/10 set of 10 samples


def test_class_counts():
    assert class_counts(LABELS) == {0: 9, 1: 1}
    assert class_counts([2, 2, 0]) == {0: 1, 2: 2}


def test_class_balanced_weights_are_inverse_class_frequency():
    weights = class_balanced_weights(LABELS)
    assert weights.dtype == torch.double and weights.shape == (10,)
    assert torch.allclose(weights[:9], torch.full((9,), 1 / 9, dtype=torch.double))
    assert weights[9].item() == 1.0
    # every class carries the same total weight
    assert weights[:9].sum().item() == pytest.approx(1.0) and weights[9:].sum().item() == 1.0


def test_class_balanced_weights_three_classes():
    weights = class_balanced_weights([0, 1, 1, 2, 2, 2])
    assert weights.tolist() == pytest.approx([1.0, 0.5, 0.5, 1 / 3, 1 / 3, 1 / 3])
    assert expected_class_fractions(weights, [0, 1, 1, 2, 2, 2]) == pytest.approx(
        {0: 1 / 3, 1: 1 / 3, 2: 1 / 3}
    )


def test_per_sample_weights_maps_class_weights():
    weights = per_sample_weights(LABELS, {0: 0.2, 1: 1.0})
    assert weights.tolist() == pytest.approx([0.2] * 9 + [1.0])
    with pytest.raises(ValueError, match="no weight for classes \\[1\\]"):
        per_sample_weights(LABELS, {0: 1.0})
    with pytest.raises(ValueError, match="class_weights\\[0\\]"):
        per_sample_weights(LABELS, {0: -1.0, 1: 1.0})
    with pytest.raises(TypeError, match="class_weights"):
        per_sample_weights(LABELS, [0.2, 1.0])


def test_expected_fraction_of_the_article_weights_is_not_balanced():
    # 0.2 / 1.0 on a 90/10 set: minority share = 1*1 / (1*1 + 0.2*9) = 1 / 2.8
    fractions = expected_class_fractions(per_sample_weights(LABELS, {0: 0.2, 1: 1.0}), LABELS)
    assert fractions[1] == pytest.approx(1 / 2.8)
    assert fractions[0] == pytest.approx(1.8 / 2.8)
    assert fractions[1] == pytest.approx(0.357, abs=1e-3)


def test_expected_fraction_of_inverse_frequency_is_one_half():
    fractions = expected_class_fractions(class_balanced_weights(LABELS), LABELS)
    assert fractions == pytest.approx({0: 0.5, 1: 0.5})


def test_expected_fraction_of_equal_weights_is_the_base_rate():
    assert expected_class_fractions(torch.ones(10), LABELS) == pytest.approx({0: 0.9, 1: 0.1})


def test_expected_class_fractions_validates():
    with pytest.raises(ValueError, match="one weight per label"):
        expected_class_fractions(torch.ones(3), LABELS)
    with pytest.raises(ValueError, match=">= 0"):
        expected_class_fractions(-torch.ones(10), LABELS)
    with pytest.raises(ValueError, match="all be zero"):
        expected_class_fractions(torch.zeros(10), LABELS)
    with pytest.raises(TypeError, match="integer class ids"):
        expected_class_fractions(torch.ones(10), LABELS.float())
    with pytest.raises(ValueError, match="non-empty 1-D"):
        expected_class_fractions(torch.ones(0), torch.tensor([], dtype=torch.long))


def test_expected_distinct_matches_the_closed_form():
    # uniform weights over 10 samples, 10 draws: each sample missed with prob 0.9**10
    distinct = expected_distinct(torch.ones(10), LABELS, num_samples=10)
    assert distinct[0] == pytest.approx(9 * (1 - 0.9**10))
    assert distinct[1] == pytest.approx(1 - 0.9**10)
    # a zero-weight sample is never visited; a sample with all the weight always is
    only_last = torch.tensor([0.0] * 9 + [1.0])
    assert expected_distinct(only_last, LABELS, num_samples=5) == pytest.approx({0: 0.0, 1: 1.0})
    with pytest.raises(ValueError, match="num_samples"):
        expected_distinct(torch.ones(10), LABELS, num_samples=0)


def test_distinct_per_class_counts_unique_indices():
    assert distinct_per_class(torch.tensor([9, 9, 9, 0, 0, 3]), LABELS) == {0: 2, 1: 1}
    assert distinct_per_class([0, 1], LABELS) == {0: 2, 1: 0}
    with pytest.raises(ValueError, match="indices must be < len"):
        distinct_per_class([10], LABELS)


def test_batch_class_fractions():
    drawn = torch.tensor([1, 0, 0, 0, 1, 1, 0, 0, 1])
    fractions = batch_class_fractions(drawn, batch_size=4)
    assert fractions.tolist() == pytest.approx([0.25, 0.5, 1.0])  # last batch holds 1 sample
    assert batch_class_fractions(drawn, batch_size=4, cls=0).tolist() == pytest.approx([0.75, 0.5, 0.0])
    with pytest.raises(ValueError, match="batch_size"):
        batch_class_fractions(drawn, batch_size=0)


def test_drawn_indices_rows_are_epochs():
    dataset = TensorDataset(torch.arange(10), LABELS)
    loader = DataLoader(dataset, batch_size=4)  # sequential: exact order known
    drawn = drawn_indices(loader, n_epochs=2)
    assert drawn.shape == (2, 10) and drawn.dtype == torch.long
    assert drawn[0].tolist() == list(range(10)) == drawn[1].tolist()
    with pytest.raises(TypeError, match="loader"):
        drawn_indices([[torch.arange(3)]], n_epochs=1)
    with pytest.raises(ValueError, match="n_epochs"):
        drawn_indices(loader, n_epochs=0)


def test_drawn_indices_of_a_weighted_sampler_follow_the_weights():
    # all weight on samples 2 and 7: only they can be drawn (exact, whatever the seed)
    weights = torch.zeros(10)
    weights[[2, 7]] = 1.0
    sampler = WeightedRandomSampler(weights, num_samples=50, replacement=True,
                                    generator=torch.Generator().manual_seed(0))
    loader = DataLoader(TensorDataset(torch.arange(10), LABELS), batch_size=8, sampler=sampler)
    drawn = drawn_indices(loader, n_epochs=3)
    assert drawn.shape == (3, 50) and set(drawn.unique().tolist()) <= {2, 7}
