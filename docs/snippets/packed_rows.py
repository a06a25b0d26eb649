"""A table of strings in two tensors (bytes + offsets) instead of one Python object per row.

With fork, reading a Python object writes its reference count, so every page of a list of str
that a worker reads is copied into that worker. Two tensors hold no per-row objects: forked
workers share them, and so do spawn and forkserver workers (torch moves the storage to shared
memory once and sends each worker a handle). Keep them tensors: NumPy arrays are pickled whole
into every spawn and forkserver worker. Notebook 06.
"""

import gc

import numpy as np
import torch
from torch.utils.data import Dataset


def pack_rows(rows):
    """All rows' UTF-8 bytes in one uint8 tensor, plus int64 offsets: row i is
    buffer[offsets[i]:offsets[i + 1]]."""
    encoded = [row.encode() for row in rows]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    buffer = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    return torch.from_numpy(buffer), torch.from_numpy(offsets)


class Captions(Dataset):
    def __init__(self, captions):
        # instead of self.captions = captions (one Python object per row):
        self.buffer, self.offsets = pack_rows(captions)

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, i):
        offsets = self.offsets.numpy()  # a NumPy view of the same memory: faster to index
        return self.buffer.numpy()[offsets[i]:offsets[i + 1]].tobytes().decode()


# Labels, lengths, ids: one NumPy array or tensor, never a list of Python ints.


def train(loader, epochs, step):
    # fork + Python objects you cannot convert: freeze them right before the workers start; the
    # collector then never writes their headers (the reference-count writes still happen).
    gc.freeze()
    for _ in range(epochs):
        for batch in loader:
            step(batch)
