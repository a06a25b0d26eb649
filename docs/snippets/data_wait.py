"""Is the input pipeline the bottleneck? Time the wait inside next(loader) against the step
(notebook 14, section 1).

Over about a fifth of the time spent waiting: more workers, a faster __getitem__ or caching
will speed training up. Near zero: look at the model instead. On a GPU, kernels run
asynchronously: while you measure, end train_step with torch.cuda.synchronize(), or the
step's time lands wherever the CPU next blocks.
"""

import time


def time_epoch(loader, train_step):
    """Run one epoch; return the seconds spent waiting in next(loader) and in the step, per batch."""
    waits, steps = [], []
    t = time.perf_counter()
    for batch in loader:
        got = time.perf_counter()
        waits.append(got - t)  # time spent in next(loader)
        train_step(batch)  # on a GPU, end it with torch.cuda.synchronize() while measuring
        t = time.perf_counter()
        steps.append(t - got)
    return waits, steps


def data_wait_fraction(loader, train_step):
    """Return the share of one epoch spent waiting for batches, each worker's first batch (its
    start-up) left out: over about 0.2, the input pipeline is the bottleneck."""
    waits, steps = time_epoch(loader, train_step)
    skip = max(1, loader.num_workers)
    wait, step = sum(waits[skip:]), sum(steps[skip:])
    return wait / (wait + step)
