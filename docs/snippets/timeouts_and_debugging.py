"""Turn a silent worker hang into an error, and see where a worker is stuck.

`timeout=` makes the main process raise instead of waiting forever; a worker_init_fn that
registers faulthandler lets you dump every worker's stack with `kill -USR1 <pid>`.
To debug a worker error, rerun with num_workers=0: the exception is raised in your process.
Notebook 08.
"""

import faulthandler
import signal
import sys

from torch.utils.data import DataLoader


def dump_stack_on_sigusr1(worker_id):
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)


def guarded_loader(dataset, batch_size=32, num_workers=2, timeout_s=60):
    return DataLoader(dataset, batch_size=batch_size, num_workers=num_workers,
                      timeout=timeout_s if num_workers else 0,
                      worker_init_fn=dump_stack_on_sigusr1)
