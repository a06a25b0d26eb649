"""Open an HDF5 file in the process that reads it, not in __init__.

An `h5py.File` opened in __init__ cannot be pickled, so `spawn` and `forkserver` workers (macOS,
Windows, Python 3.14 on Linux) cannot start; under `fork` every worker shares the descriptor
and a copy of HDF5's state taken at fork time. Open the file at the first read in each process
and leave it out of the pickled state: the recipe of a plain file. Notebook 20, section 2.
"""

import os

import h5py
import torch
from torch.utils.data import Dataset


class H5Dataset(Dataset):
    """Row i of the HDF5 dataset `name` in the file at `path`, as a tensor."""

    def __init__(self, path, name):
        self.path, self.name = path, name
        with h5py.File(path, "r") as file:  # only to learn the length
            self.n = len(file[name])
        self.file, self.rows, self.pid = None, None, None

    def _rows(self):
        if self.pid != os.getpid():  # first read in this process (main, or a new worker)
            self.file, self.pid = h5py.File(self.path, "r"), os.getpid()
            self.rows = self.file[self.name]
        return self.rows

    def __getstate__(self):  # spawn/forkserver pickle the dataset: the worker opens its own file
        return {**self.__dict__, "file": None, "rows": None, "pid": None}

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.from_numpy(self._rows()[i])
