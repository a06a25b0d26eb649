"""Written by notebook 08, section 3: a script that quits mid-epoch (a fresh Python imports it)."""

import multiprocessing
import time

from torch.utils.data import DataLoader

kept = []  # module globals live until the interpreter exits


def quit_mid_epoch():
    """Leave a 2-worker iterator unexhausted and break out of a persistent loader, then return."""
    dataset = list(range(64))
    it = iter(DataLoader(dataset, batch_size=4, num_workers=2))
    next(it)  # one batch; the iterator stays unexhausted
    persistent = DataLoader(dataset, batch_size=4, num_workers=2, persistent_workers=True)
    for _batch in persistent:
        break  # persistent workers stay up, mid-epoch
    kept.extend([it, persistent])
    return {"workers": len(multiprocessing.active_children()), "last_line_at": time.time()}
