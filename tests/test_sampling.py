"""Exact checks of loaderlab.sampling: every expected value is computed by hand, no sampling luck."""

from __future__ import annotations

import pytest
import torch

from loaderlab.sampling import (
    class_balanced_weights,
    expected_class_fractions,
    expected_distinct,
)

LABELS = torch.tensor([0] * 9 + [1])  # a 90/10 set of 10 samples


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


