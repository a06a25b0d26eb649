"""Written by notebook 12, section 1: a Dataset whose free samples report on the process that fetched them."""

import sys
import time

import torch
from torch.utils.data import Dataset


class StartupProbe(Dataset):
    """n samples that cost nothing to fetch; each is (CPU seconds this process's main thread has used, modules
    it has imported). In a new worker the first sample tells what getting ready cost the worker itself."""

    def __init__(self, n: int = 16):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor([time.thread_time(), len(sys.modules)], dtype=torch.float64)
