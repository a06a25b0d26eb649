"""Tests for loaderlab.source: quoting torch's source."""

from __future__ import annotations

import pytest
from torch.utils.data._utils.worker import _worker_loop

from loaderlab.source import (
    source_lines,
)


def test_source_lines_quotes_the_worker_seeding():
    lines = source_lines(_worker_loop, ["seed = base_seed", "random.seed("])
    assert lines[0] == "seed = base_seed + worker_id"
    assert "random.seed(seed)" in lines and "np.random.seed(np_seed)" in [line.strip() for line in lines]
    with pytest.raises(ValueError, match="contains"):
        source_lines(_worker_loop, [])
    with pytest.raises(TypeError, match="function"):
        source_lines(3, "x")
