"""Written by notebook 18, section 1: samples that cost CPU, wait for I/O, are sometimes slow."""

import time

import torch
from torch.utils.data import Dataset


class SyntheticSamples(Dataset):
    """Sample i is (FloatTensor[dim] filled with i, i % 2). Each read waits io_ms (the CPU stays
    free), then keeps a core busy for cpu_ms; a share slow_rate of the samples wait slow_ms more."""

    def __init__(self, n: int, cpu_ms: float, io_ms: float, slow_rate: float = 0.0, slow_ms: float = 250.0,
                 dim: int = 64):
        self.n, self.cpu_ms, self.io_ms, self.dim = n, cpu_ms, io_ms, dim
        self.slow_rate, self.slow_ms = slow_rate, slow_ms

    def __len__(self) -> int:
        return self.n

    def is_slow(self, index: int) -> bool:
        """The same samples are slow on every run: a fixed scramble of the index picks them."""
        return (index * 2654435761) % 1000 < self.slow_rate * 1000

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        time.sleep((self.io_ms + (self.slow_ms if self.is_slow(index) else 0.0)) / 1000)  # the read
        done = time.thread_time() + self.cpu_ms / 1000  # the decode: CPU time, longer on a busy core
        while time.thread_time() < done:
            pass
        return torch.full((self.dim,), float(index)), index % 2
