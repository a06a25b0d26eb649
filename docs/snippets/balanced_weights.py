"""Per-sample weights that make WeightedRandomSampler draw every class equally often.

A sample's weight is 1 / (size of its class), so each class's weights sum to 1. The share of
draws a class gets is its total weight over the total: compute it before training. (The
popular 0.2 / 1.0 weights on a 90/10 split give the minority 1.0 * 100 / (1.0 * 100 + 0.2 * 900)
= 35.7 % of the draws, not half.) Notebook 09.
"""

import torch
from torch.utils.data import WeightedRandomSampler


def balanced_sampler(labels, num_samples=None, generator=None):
    """Oversample: every class drawn equally often, with replacement."""
    labels = torch.as_tensor(labels)
    counts = torch.bincount(labels)                 # samples per class
    weights = 1.0 / counts[labels].double()         # inverse class frequency, one weight per sample
    return WeightedRandomSampler(weights, num_samples or len(labels), replacement=True,
                                 generator=generator)


def expected_share(weights, labels, cls):
    """The share of draws class cls gets, before training: its total weight over the total."""
    weights, labels = torch.as_tensor(weights, dtype=torch.double), torch.as_tensor(labels)
    return (weights[labels == cls].sum() / weights.sum()).item()
