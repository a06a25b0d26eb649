"""Written by notebook 20, section 2: rows of an HDF5 file, opened in __init__ or where they are read."""

import os

import h5py
import torch
from torch.utils.data import Dataset


class H5Rows(Dataset):
    """Row i of the HDF5 dataset `name` as a tensor; the file is opened in __init__."""

    def __init__(self, path: str, name: str = "rows"):
        self.path, self.name = path, name
        self.file = h5py.File(path, "r")  # one open file for all reads
        self.rows = self.file[name]
        self.n = len(self.rows)

    def opened(self):
        return self.rows

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return torch.from_numpy(self.opened()[index])


class LazyH5Rows(H5Rows):
    """The recipe of section 1: each process opens the file itself, at its first read."""

    def __init__(self, path: str, name: str = "rows"):
        self.path, self.name = path, name
        with h5py.File(path, "r") as file:  # only to learn the length; closed at once
            self.n = len(file[name])
        self.file, self.rows, self.pid = None, None, None

    def opened(self):
        if self.pid != os.getpid():  # first read in this process
            self.file, self.pid = h5py.File(self.path, "r"), os.getpid()
            self.rows = self.file[self.name]
        return self.rows

    def __getstate__(self):  # spawn pickles the dataset: h5py objects cannot travel
        return {**self.__dict__, "file": None, "rows": None, "pid": None}
