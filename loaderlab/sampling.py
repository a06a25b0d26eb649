"""The class mix that per-sample weights produce, computed exactly (the lab 09 checker's decision):
``WeightedRandomSampler`` draws index ``i`` with probability ``w_i / sum(w)``, so a class's share
of the draws is its total weight over the total."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def expected_class_fractions(
    weights: torch.Tensor | Sequence[float], labels: torch.Tensor | Sequence[int]
) -> dict[int, float]:
    """Return ``{class id: expected share of draws}`` for a sampler drawing index ``i`` with
    probability ``weights[i] / sum(weights)``: the class's total weight over the total."""
    labels, weights = torch.as_tensor(labels), torch.as_tensor(weights, dtype=torch.double)
    if labels.dim() != 1 or labels.numel() == 0:
        raise ValueError(
            f"labels must be a non-empty 1-D sequence of class ids, got shape {tuple(labels.shape)}"
        )
    if labels.dtype.is_floating_point or labels.dtype == torch.bool or labels.is_complex():
        raise TypeError(f"labels must hold integer class ids, got dtype {labels.dtype}")
    if int(labels.min()) < 0:
        raise ValueError(f"labels must be >= 0, got {int(labels.min())}")
    if weights.shape != labels.shape:
        raise ValueError(
            f"weights must be 1-D with one weight per label ({len(labels)}), got shape {tuple(weights.shape)}"
        )
    if not torch.isfinite(weights).all() or (weights < 0).any() or float(weights.sum()) <= 0:
        raise ValueError("weights must be finite and >= 0, and must not all be zero")
    per_class = torch.zeros(int(labels.max()) + 1, dtype=torch.double).index_add_(0, labels.long(), weights)
    return {int(c): float(per_class[c] / weights.sum()) for c in torch.unique(labels)}
