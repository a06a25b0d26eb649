"""Unit tests for loaderlab.collate.padding_waste, the instrument notebook 05 measures padding
with (its collate_fn and bucketing sampler are lesson code, tested in test_snippets_05)."""

from __future__ import annotations

import pytest
from torch.utils.data import BatchSampler, SequentialSampler

from loaderlab.collate import padding_waste


def test_padding_waste_counts_pad_tokens():
    lengths = [2, 4, 4, 4]
    assert padding_waste([[1, 2, 3]], lengths) == 0.0
    # [0, 1] padded to 4: 2 pad of 8; [2, 3]: 0 pad of 8 -> 2 / 16
    assert padding_waste([[0, 1], [2, 3]], lengths) == pytest.approx(2 / 16)
    by_two = BatchSampler(SequentialSampler(lengths), 2, False)
    assert padding_waste(by_two, lengths) == pytest.approx(2 / 16)
    with pytest.raises(ValueError, match="lengths"):
        padding_waste([[0]], [])
    with pytest.raises(ValueError, match="empty"):
        padding_waste([], [1, 2])
