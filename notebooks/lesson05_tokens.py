"""Written by notebook 05 (05_collate_and_padding.ipynb), section 1: sequences of different lengths."""

import itertools

import torch
from torch.utils.data import Dataset


class TokenDataset(Dataset):
    """Token sequences of different lengths: returns (tokens: LongTensor[L_i], label: int)."""

    def __init__(self, samples: list[tuple[torch.Tensor, int]]):
        # One flat tensor plus offsets, not a tensor per sample: forkserver workers reject a
        # Dataset holding over 256 tensors ("too many fds", one file descriptor per tensor).
        self.tokens = torch.cat([tokens for tokens, _ in samples])
        self.offsets = [0, *itertools.accumulate(len(tokens) for tokens, _ in samples)]
        self.labels = [label for _, label in samples]

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        start, end = self.offsets[index], self.offsets[index + 1]
        return self.tokens[start:end], self.labels[index]

    def lengths(self) -> list[int]:
        """The length of every sequence, in index order."""
        return [self.offsets[i + 1] - self.offsets[i] for i in range(len(self))]
