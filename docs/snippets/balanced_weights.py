"""Per-sample weights that make WeightedRandomSampler draw every class equally often.

A sample's weight is 1 / (size of its class), so each class's weights sum to 1.
(The popular 0.2 / 1.0 weights on a 90/10 split draw the minority only 36 % of the time.)
Notebook 09.
"""

from collections import Counter

from torch.utils.data import WeightedRandomSampler


def balanced_sampler(labels, num_samples=None, generator=None):
    labels = [int(y) for y in labels]
    counts = Counter(labels)
    weights = [1.0 / counts[y] for y in labels]
    return WeightedRandomSampler(weights, num_samples or len(labels), replacement=True,
                                 generator=generator)
