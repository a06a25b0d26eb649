"""Lab 14: a pipeline with a slow stage, and your fix (workers import this module)."""

import time

import torch
from torch.utils.data import Dataset


class Records(Dataset):
    """Record i as (word ids, i): its words, mapped through a vocabulary."""

    def __init__(self, n: int = 24, vocabulary_s: float = 0.03):
        self.n, self.vocabulary_s = n, vocabulary_s

    def __len__(self) -> int:
        return self.n

    def read(self, index: int) -> list[str]:
        """Record index's words (from a fast store)."""
        return [f"w{(index * 7 + k) % 50}" for k in range(6)]

    def load_vocabulary(self) -> dict[str, int]:
        """The word -> id table, from its file (simulated)."""
        time.sleep(self.vocabulary_s)
        return {f"w{k}": 100 + k for k in range(50)}

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        vocabulary = self.load_vocabulary()
        return torch.tensor([vocabulary[word] for word in self.read(index)]), index


class FastRecords(Records):
    """The same records, without paying the slow stage for every sample."""

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        ### BEGIN SOLUTION
        if not hasattr(self, "vocabulary"):
            self.vocabulary = self.load_vocabulary()  # once per process, not once per sample
        return torch.tensor([self.vocabulary[word] for word in self.read(index)]), index
        ### END SOLUTION
