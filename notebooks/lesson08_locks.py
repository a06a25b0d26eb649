"""Written by notebook 08, section 1: a dataset behind a client's lock; a stack-dumping worker_init_fn."""

import faulthandler
import os
import signal
import threading

import torch
from torch.utils.data import Dataset

CLIENT_LOCK = threading.Lock()  # the lock inside a client: a connection pool, an HTTP session


class LockedDataset(Dataset):
    """Returns index as a tensor after taking the client's lock; gives up after give_up_s."""

    def __init__(self, n: int = 8, per_process: bool = False, give_up_s: float = 3.0):
        self.n, self.per_process, self.give_up_s = n, per_process, give_up_s
        self.own_lock, self.pid = None, None

    def lock(self) -> threading.Lock:
        if not self.per_process:
            return CLIENT_LOCK  # created once, at import: a forked worker gets a copy
        if self.pid != os.getpid():  # first use in this process: make our own (the fix)
            self.own_lock, self.pid = threading.Lock(), os.getpid()
        return self.own_lock

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        lock = self.lock()
        if not lock.acquire(timeout=self.give_up_s):  # a real client would wait forever
            raise TimeoutError(f"client lock not acquired within {self.give_up_s:g} s")
        try:
            return torch.tensor(index)
        finally:
            lock.release()

    def __getstate__(self):  # a lock cannot be pickled (spawn): the worker makes its own
        return {**self.__dict__, "own_lock": None, "pid": None}


class DumpStackOnSignal:
    """A worker_init_fn: on SIGUSR1 the worker writes its threads' stacks to folder/worker-<id>.stack.

    The file's first line is the worker's pid. Windows has no SIGUSR1: there the file holds the pid only."""

    def __init__(self, folder: str):
        self.folder = folder

    def __call__(self, worker_id: int):
        file = open(os.path.join(self.folder, f"worker-{worker_id}.stack"), "w")  # noqa: SIM115 - stays open
        if hasattr(signal, "SIGUSR1"):  # POSIX only
            faulthandler.register(signal.SIGUSR1, file=file, all_threads=True)
        file.write(f"{os.getpid()}\n")  # the pid, once the handler is in place
        file.flush()
