"""Guess which limit binds a DataLoader before you measure: workers, free cores or the step
(notebook 18, the playground).

Samples/s is at most num_workers / (seconds per sample), free cores / (CPU seconds per sample)
and batch_size / (step seconds): the smallest binds. Time one sample (`__getitem__`) and one
step, then ask for the fewest workers that keep up with the step; the playground shows where
the machine falls short of this model (worker start-up, collation, a busy machine).
"""

import math
import os


def loader_limits(num_workers, sample_s, sample_cpu_s, batch_size, step_s, free_cores=None):
    """Return ({limit: samples/s}, the limit that binds) for a loader with num_workers >= 1."""
    if free_cores is None:
        free_cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    limits = {
        "workers": num_workers / sample_s if sample_s else math.inf,  # each worker reads one sample at a time
        # waits need no core, decoding does
        "free cores": free_cores / sample_cpu_s if sample_cpu_s else math.inf,
        "step": batch_size / step_s if step_s else math.inf,  # the loop cannot take batches faster
    }
    return limits, min(limits, key=limits.get)


def workers_to_keep_up(sample_s, batch_size, step_s):
    """The fewest workers whose batches arrive as fast as the step takes them (if the cores allow)."""
    return max(1, math.ceil(sample_s * batch_size / step_s))
