"""Lesson 14, section 3: a worker_init_fn that dumps the worker's stack on a signal (workers import this module)."""

import faulthandler
import os
import signal


class DumpStackOnSignal:
    """A worker_init_fn: on SIGUSR1 the worker writes its threads' stacks to folder/worker-<id>.stack."""

    def __init__(self, folder: str):
        self.folder = folder

    def __call__(self, worker_id: int):
        file = open(os.path.join(self.folder, f"worker-{worker_id}.stack"), "w")  # noqa: SIM115 - stays open
        faulthandler.register(signal.SIGUSR1, file=file, all_threads=True)
        file.write(f"{os.getpid()}\n")  # the pid, once the handler is in place
        file.flush()
