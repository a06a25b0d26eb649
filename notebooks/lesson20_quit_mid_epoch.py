"""Written by notebook 20, section 3: a script that quits mid-epoch (a fresh Python imports it)."""

import atexit
import multiprocessing
import multiprocessing.util
import time

from torch.utils.data import DataLoader

kept = []  # module globals live until the interpreter exits


def quit_mid_epoch(without_exit_function: bool = False):
    """Leave a 2-worker iterator unexhausted and break out of a persistent loader, then return.
    without_exit_function=True unregisters CPython's multiprocessing exit function first."""
    dataset = list(range(64))
    it = iter(DataLoader(dataset, batch_size=4, num_workers=2))
    next(it)  # one batch; the iterator stays unexhausted
    persistent = DataLoader(dataset, batch_size=4, num_workers=2, persistent_workers=True)
    for _batch in persistent:
        break  # persistent workers stay up, mid-epoch
    kept.extend([it, persistent])
    if without_exit_function:  # the experiment: who stops daemonic workers at exit?
        atexit.unregister(multiprocessing.util._exit_function)
    workers = multiprocessing.active_children()
    return {"workers": len(workers), "daemonic": sum(w.daemon for w in workers), "last_line_at": time.time()}
