"""Lesson 17, sections 4-6: a slow remote read and a 90/10 label set (workers import this module)."""

import time

import torch
from torch.utils.data import DataLoader, Dataset, WeightedRandomSampler


class RemoteSamples(Dataset):
    """n samples (8 features, a label); each fetch waits latency_s, like a read from object storage."""

    def __init__(self, n: int, latency_s: float = 0.02):
        self.n, self.latency_s = n, latency_s
        self.features = torch.randn(n, 8, generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        time.sleep(self.latency_s)  # waiting, not computing: no CPU used
        return self.features[index], index % 2


class Labelled(Dataset):
    """A 90/10 label set: sample i has label 1 when i % 10 == 0 (labels in dataset.targets)."""

    def __init__(self, n: int):
        self.targets = torch.tensor([int(i % 10 == 0) for i in range(n)])

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[int, int]:
        return index, int(self.targets[index])


def class_weighted_loader() -> DataLoader:
    """The bug: one weight per class (2 numbers) handed to the sampler of 1,000 samples."""
    dataset = Labelled(1000)
    class_weights = 1.0 / torch.bincount(dataset.targets).double()  # 1/900 and 1/100
    sampler = WeightedRandomSampler(class_weights, num_samples=len(dataset))
    return DataLoader(dataset, batch_size=10, sampler=sampler)


def sample_weighted_loader() -> DataLoader:
    """The fix: the class weights indexed by each sample's label, one weight per sample."""
    dataset = Labelled(1000)
    class_weights = 1.0 / torch.bincount(dataset.targets).double()
    sampler = WeightedRandomSampler(class_weights[dataset.targets], num_samples=len(dataset))
    return DataLoader(dataset, batch_size=10, sampler=sampler)
