"""Tests for loaderlab.streaming.coverage: how delivered items cover range(n)."""

from __future__ import annotations

from loaderlab.streaming import coverage


def test_coverage_counts():
    cov = coverage([0, 1, 1, 3, 7], n=5)
    assert (cov.delivered, cov.distinct, cov.missing, cov.duplicates, cov.out_of_range) == (5, 3, 2, 1, 1)
    assert not cov.exactly_once
    assert coverage([2, 0, 1], n=3).exactly_once
