"""Written by notebook 08, section 2: a dataset that fails at one index, and the loop that meets it."""

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
    """Returns index as a tensor, except at fail_at: mode "raise", "custom" or "kill" (SIGKILL, in a
    worker)."""

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
            os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))  # what the OOM killer does
        raise RuntimeError("mode='kill' only kills worker processes")


def run_loops(loaders: dict) -> dict:
    """Run `for batch in loader:` over each loader; per name: batches received, and the error raised
    ("Type: message", its type, and the error it was raised from), as text."""
    report = {}
    for name, loader in loaders.items():
        report[name] = {"batches": 0, "error": None, "type": None, "cause": None}
        try:
            for batch in loader:  # noqa: B007 - a training step would use the batch
                report[name]["batches"] += 1
        except Exception as error:  # only text leaves the except block: its traceback holds the workers
            cause = error.__cause__
            report[name].update(error=f"{type(error).__name__}: {error}", type=type(error).__name__,
                                cause=f"{type(cause).__name__}: {cause}" if cause is not None else None)
    return report
