"""Undersampling: a new weighted subsample every epoch, no sample twice in it.

WeightedRandomSampler(replacement=False) with num_samples below the dataset size draws
num_samples different indices, heavy ones more likely (torch.multinomial without
replacement). The minority gets less than the with-replacement share (its total weight over
the total): every sample drawn leaves the pool. Notebook 09, section 6.
"""

from torch.utils.data import DataLoader, WeightedRandomSampler


def undersampling_loader(dataset, weights, num_samples, batch_size=64, generator=None):
    """A loader over a new weighted subsample of num_samples distinct samples every epoch."""
    if num_samples > len(dataset):  # torch itself fails only when the first epoch starts
        raise ValueError(f"num_samples={num_samples} exceeds the {len(dataset)} samples")
    sampler = WeightedRandomSampler(weights, num_samples, replacement=False, generator=generator)
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)  # no shuffle= with sampler=
