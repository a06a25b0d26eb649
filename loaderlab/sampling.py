"""The class mix that per-sample weights produce, computed exactly (the lab 09 checker's decision).

``WeightedRandomSampler`` draws index ``i`` with probability ``w_i / sum(w)``; summing over the
samples of a class gives the share of draws that class gets, from the weights alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def _labels(labels: torch.Tensor | Sequence[int], name: str = "labels") -> torch.Tensor:
    tensor = torch.as_tensor(labels)
    if tensor.dim() != 1 or tensor.numel() == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of class ids, got shape {tuple(tensor.shape)}")
    if tensor.dtype.is_floating_point or tensor.dtype == torch.bool or tensor.is_complex():
        raise TypeError(f"{name} must hold integer class ids, got dtype {tensor.dtype}")
    if int(tensor.min()) < 0:
        raise ValueError(f"{name} must be >= 0, got {int(tensor.min())}")
    return tensor.long()


def _weights(weights: torch.Tensor | Sequence[float], n: int) -> torch.Tensor:
    tensor = torch.as_tensor(weights, dtype=torch.double)
    if tensor.dim() != 1 or tensor.numel() != n:
        raise ValueError(f"weights must be 1-D with one weight per label ({n}), got shape {tuple(tensor.shape)}")
    if not torch.isfinite(tensor).all() or (tensor < 0).any():
        raise ValueError("weights must be finite and >= 0")
    if float(tensor.sum()) <= 0:
        raise ValueError("weights must not all be zero")
    return tensor


def expected_class_fractions(
    weights: torch.Tensor | Sequence[float], labels: torch.Tensor | Sequence[int]
) -> dict[int, float]:
    """Return ``{class id: expected share of draws}`` for a sampler drawing index ``i`` with
    probability ``weights[i] / sum(weights)``: the class's total weight over the total.

    With one weight per class, class ``c`` gets ``w_c * n_c / sum_k(w_k * n_k)``.
    """
    labels = _labels(labels)
    weights = _weights(weights, len(labels))
    per_class = torch.zeros(int(labels.max()) + 1, dtype=torch.double).index_add_(0, labels, weights)
    total = float(weights.sum())
    return {int(c): float(per_class[c]) / total for c in torch.unique(labels)}
