"""Weighted sampling: per-sample weights, and the class mix they produce, computed exactly.

``WeightedRandomSampler`` draws index ``i`` with probability ``w_i / sum(w)``. Summing over the
samples of a class gives the share of draws that class gets; these functions compute that
share (and related expectations) from the weights alone, so a measurement can be checked
against it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch.utils.data import DataLoader

from loaderlab.loaders import require_loader, require_positive


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


def class_counts(labels: torch.Tensor | Sequence[int]) -> dict[int, int]:
    """Return ``{class id: number of samples}`` for the classes present in ``labels``."""
    values, counts = torch.unique(_labels(labels), return_counts=True)
    return {int(v): int(c) for v, c in zip(values, counts, strict=True)}


def class_balanced_weights(labels: torch.Tensor | Sequence[int]) -> torch.Tensor:
    """Return one weight per sample, ``1 / (number of samples of its class)``, as a DoubleTensor.

    Every class then carries the same total weight (1), so a ``WeightedRandomSampler`` draws
    each class equally often in expectation.
    """
    labels = _labels(labels)
    counts = torch.bincount(labels).double()
    return 1.0 / counts[labels]


def per_sample_weights(
    labels: torch.Tensor | Sequence[int], class_weights: Mapping[int, float]
) -> torch.Tensor:
    """Return one weight per sample, ``class_weights[label]``, as a DoubleTensor."""
    labels = _labels(labels)
    if not isinstance(class_weights, Mapping):
        raise TypeError(f"class_weights must be a mapping class id -> weight, got {type(class_weights).__name__}")
    missing = sorted(set(labels.tolist()) - set(class_weights))
    if missing:
        raise ValueError(f"class_weights has no weight for classes {missing}")
    table = torch.zeros(int(labels.max()) + 1, dtype=torch.double)
    for cls, weight in class_weights.items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
            raise ValueError(f"class_weights[{cls}] must be a number >= 0, got {weight!r}")
        if 0 <= cls < len(table):
            table[cls] = float(weight)
    return table[labels]


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


def expected_distinct(
    weights: torch.Tensor | Sequence[float], labels: torch.Tensor | Sequence[int], num_samples: int
) -> dict[int, float]:
    """Return ``{class id: expected number of distinct samples drawn}`` when ``num_samples``
    indices are drawn *with replacement* with probabilities ``weights / sum(weights)``.

    Sample ``i`` is missed by all draws with probability ``(1 - p_i) ** num_samples``.
    """
    require_positive(num_samples, "num_samples")
    labels = _labels(labels)
    weights = _weights(weights, len(labels))
    p = weights / weights.sum()
    seen = 1.0 - (1.0 - p) ** num_samples
    per_class = torch.zeros(int(labels.max()) + 1, dtype=torch.double).index_add_(0, labels, seen)
    return {int(c): float(per_class[c]) for c in torch.unique(labels)}


def distinct_per_class(indices: torch.Tensor | Sequence[int], labels: torch.Tensor | Sequence[int]) -> dict[int, int]:
    """Return ``{class id: number of distinct samples among indices}`` (0 for unvisited classes)."""
    labels = _labels(labels)
    indices = _labels(indices, "indices")
    if int(indices.max()) >= len(labels):
        raise ValueError(f"indices must be < len(labels) = {len(labels)}, got {int(indices.max())}")
    unique = torch.unique(indices)
    visited = torch.bincount(labels[unique], minlength=int(labels.max()) + 1)
    return {int(c): int(visited[c]) for c in torch.unique(labels)}


def batch_class_fractions(
    drawn_labels: torch.Tensor | Sequence[int], batch_size: int, cls: int = 1
) -> torch.Tensor:
    """Return the fraction of class ``cls`` in each consecutive batch of ``drawn_labels``
    (the labels in the order a loader yields them); a last, smaller batch is included."""
    require_positive(batch_size, "batch_size")
    drawn = _labels(drawn_labels, "drawn_labels")
    is_cls = (drawn == cls).double()
    return torch.stack([chunk.mean() for chunk in is_cls.split(batch_size)])


def drawn_indices(loader: DataLoader, n_epochs: int = 1) -> torch.Tensor:
    """Return the dataset indices a loader yields, one row per epoch: a LongTensor
    ``[n_epochs, samples per epoch]``.

    The loader's batches must carry the sample index first — ``(indices, ...)`` as from
    ``TensorDataset(torch.arange(n), ...)``.
    """
    require_loader(loader)
    require_positive(n_epochs, "n_epochs")
    epochs = []
    for _ in range(n_epochs):
        batches = [batch[0] if isinstance(batch, (list, tuple)) else batch for batch in loader]
        epochs.append(torch.cat([torch.as_tensor(b).reshape(-1) for b in batches]).long())
    if len({len(e) for e in epochs}) != 1:
        raise ValueError("epochs yielded different numbers of samples; cannot stack them")
    return torch.stack(epochs)
