"""Open files, connections and clients in the process that uses them, not in __init__.

A file opened in __init__ is copied into forked workers with its offset shared: the workers
move one another's read position and get wrong records, with no error. A lock (inside a
client, a connection pool) copied at fork time while another thread held it stays locked
forever in the worker. Create both lazily, per process; leave them out when pickled.
Notebook 20, section 1 (the lock: notebook 08, section 1).
"""

import os

from torch.utils.data import DataLoader, Dataset


class RecordsFile(Dataset):
    """Fixed-size records of one file; each process opens its own file at its first read."""

    def __init__(self, path, record_size, n):
        self.path, self.record_size, self.n = path, record_size, n
        self.file, self.pid = None, None

    def _file(self):
        if self.pid != os.getpid():  # first read in this process (main, or a new worker)
            self.file, self.pid = open(self.path, "rb"), os.getpid()  # noqa: SIM115
        return self.file

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        file = self._file()
        file.seek(i * self.record_size)
        return file.read(self.record_size)

    def __getstate__(self):  # spawn/forkserver pickle the dataset: the worker opens its own file
        return {**self.__dict__, "file": None, "pid": None}


def fresh_workers_loader(dataset, num_workers=4):
    """Or start the workers fresh: nothing is inherited, but the dataset's class must be
    importable (not defined in a notebook) and every argument picklable (no lambdas)."""
    return DataLoader(dataset, num_workers=num_workers, multiprocessing_context="forkserver")
