"""Written by notebook 20, section 1: fixed-size records read from one file (workers import it)."""

import os
import time

from torch.utils.data import Dataset


class RecordFile(Dataset):
    """Record i of a file of 8-byte records (the number i as text); the file is opened in __init__."""

    def __init__(self, path: str, n: int, decode_s: float = 0.005):
        self.path, self.n, self.decode_s = path, n, decode_s
        self.file = open(path, "rb", buffering=0)  # noqa: SIM115 - one file for all reads
        self.position = 0  # where our last read ended: reading in order needs no seek

    def opened(self):
        return self.file

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        file, offset = self.opened(), index * 8
        if offset != self.position:
            file.seek(offset)
        record = file.read(8)
        self.position = offset + 8
        time.sleep(self.decode_s)  # decoding the record
        return int(record)


class LazyRecordFile(RecordFile):
    """The fix: each process opens the file itself, at its first read, so it has its own offset."""

    def __init__(self, path: str, n: int, decode_s: float = 0.005):
        self.path, self.n, self.decode_s = path, n, decode_s
        self.file, self.pid = None, None

    def opened(self):
        if self.pid != os.getpid():  # first read in this process
            self.file, self.position, self.pid = open(self.path, "rb", buffering=0), 0, os.getpid()  # noqa: SIM115
        return self.file

    def __getstate__(self):  # spawn pickles the dataset: a file cannot travel, the worker opens its own
        return {**self.__dict__, "file": None, "pid": None}
