"""Lesson 08, section 2: a dataset that fails at one index (workers import this module)."""

import os
import signal

import torch
from torch.utils.data import Dataset, get_worker_info


class FetchError(Exception):
    """A custom exception whose constructor needs two arguments."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


class CrashingDataset(Dataset):
    """Returns index as a tensor, except at fail_at: mode "raise", "custom" or "kill" (SIGKILL, in a worker)."""

    def __init__(self, n: int = 16, fail_at: int = 1, mode: str = "raise"):
        self.n, self.fail_at, self.mode = n, fail_at, mode

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        if index == self.fail_at:
            self._fail(index)
        return torch.tensor(index)

    def _fail(self, index):
        if self.mode == "raise":
            raise ValueError(f"sample {index} is corrupt")
        if self.mode == "custom":
            raise FetchError(f"sample_{index}.jpg", "truncated file")
        if get_worker_info() is not None:  # never kill the notebook's own process
            os.kill(os.getpid(), signal.SIGKILL)  # what the out-of-memory killer does
        raise RuntimeError("mode='kill' only kills worker processes")
