"""Keep large metadata in one buffer, not in millions of Python objects.

With fork, reading a Python object writes its reference count, which copies its memory page
into the worker: a list of strings ends up copied into every worker. One NumPy bytes array
(or a bytes buffer plus offsets) has no per-row objects and stays shared. Notebook 06.
"""

import numpy as np
from torch.utils.data import Dataset


class PackedStrings(Dataset):
    def __init__(self, rows):
        encoded = [row.encode("utf-8") for row in rows]
        self.offsets = np.cumsum([0] + [len(b) for b in encoded])
        self.buffer = np.frombuffer(b"".join(encoded), dtype=np.uint8)

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, index):
        start, end = self.offsets[index], self.offsets[index + 1]
        return self.buffer[start:end].tobytes().decode("utf-8")
