"""``padding_waste``: the share of pad tokens a batch plan costs, for the lab 05 checker.

Notebook 05 writes the same metric in a cell, beside its collate_fn and bucketing sampler, so
the learner reads it there; the checker measures an answer with this copy."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch


def padding_waste(batches: Iterable[Sequence[int]], lengths: Sequence[int]) -> float:
    """Return the fraction (0–1) of pad tokens when each batch of indices is padded to its
    longest sequence: ``sum(B_b * T_b - sum L_i) / sum(B_b * T_b)``.

    ``batches`` yields lists of dataset indices (e.g. a ``BatchSampler``); ``lengths[i]`` is
    the length of sample ``i``.
    """
    if isinstance(lengths, torch.Tensor):
        lengths = lengths.tolist()
    if not isinstance(lengths, Sequence) or not lengths:
        raise ValueError("lengths must be a non-empty sequence of sequence lengths")
    padded_total = 0
    real_total = 0
    for batch in batches:
        if not len(batch):
            raise ValueError("batches must not contain an empty batch")
        batch_lengths = [lengths[i] for i in batch]
        if min(batch_lengths) < 0:
            raise ValueError("lengths must be >= 0")
        padded_total += len(batch_lengths) * max(batch_lengths)
        real_total += sum(batch_lengths)
    if padded_total == 0:
        raise ValueError("batches is empty (or all sequences have length 0): no tokens to count")
    return (padded_total - real_total) / padded_total
