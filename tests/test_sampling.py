"""Exact checks of loaderlab.sampling: every expected value is computed by hand, no sampling luck."""

from __future__ import annotations

import pytest
import torch

from loaderlab.sampling import expected_class_fractions

LABELS = torch.tensor([0] * 9 + [1])  # a 90/10 set of 10 samples


def test_inverse_class_frequency_balances_three_classes():
    weights = [1.0, 0.5, 0.5, 1 / 3, 1 / 3, 1 / 3]
    assert expected_class_fractions(weights, [0, 1, 1, 2, 2, 2]) == pytest.approx(
        {0: 1 / 3, 1: 1 / 3, 2: 1 / 3}
    )
    # a class's share is its total weight over the total: 1 : 2 * 0.5 : 3 * 2 = 1 : 1 : 6
    assert expected_class_fractions([1.0, 0.5, 0.5, 2, 2, 2], [0, 1, 1, 2, 2, 2]) == pytest.approx(
        {0: 1 / 8, 1: 1 / 8, 2: 6 / 8}
    )


def test_expected_fraction_of_inverse_frequency_is_one_half():
    fractions = expected_class_fractions(1.0 / torch.bincount(LABELS).double()[LABELS], LABELS)
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
