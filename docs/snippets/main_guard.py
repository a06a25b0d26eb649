"""A training script whose DataLoader starts workers: run it under the __main__ guard.

Under spawn (macOS, Windows) and forkserver (Linux from Python 3.14) a worker imports your
script again, as the module __mp_main__, to find the classes and functions it was sent.
Code at module level runs again there; a loader iterated at module level would start workers
from a worker that is still starting, and multiprocessing stops it with "RuntimeError: An
attempt has been made to start a new process before the current process has finished its
bootstrapping phase." Definitions stay at module level (workers import them); the work goes
under the guard. Notebook 12, section 5.
"""

import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    """Defined at module level: a spawned worker imports it from this file."""

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.tensor(i * i)


def main():
    loader = DataLoader(Squares(), batch_size=16, num_workers=2, multiprocessing_context="spawn")
    total = sum(int(batch.sum()) for batch in loader)
    print("sum of squares:", total)


if __name__ == "__main__":  # False when a worker imports this file as __mp_main__
    main()
