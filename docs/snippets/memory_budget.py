"""A DataLoader's peak memory, predicted before you launch it.

At its peak a loader holds your main process, and per worker its start cost, what your Dataset
keeps (caches, decoded data: the growth) and prefetch_factor batches in flight, plus the batch
you hold; with pin_memory=True a pinned copy of each batch in flight. A memory limit (a
container, a pod, a Slurm job) that the sum passes ends in "DataLoader worker (pid X) is killed
by signal: Killed". Cut the growth first (shared storage, a capped cache), then num_workers,
prefetch_factor, batch size. Notebook 23.
"""


def loader_budget_mb(main_mb, worker_growth_mb, batch_mb, num_workers, prefetch_factor=2,
                     pin_memory=False, worker_start_mb=30):
    """Peak memory of a loader: main + workers x (start + growth + prefetch_factor x batch) + held."""
    if num_workers == 0:
        return main_mb + worker_growth_mb + batch_mb * (2 if pin_memory else 1)
    in_flight = num_workers * prefetch_factor * batch_mb
    pinned = (num_workers * prefetch_factor + 1) * batch_mb if pin_memory else 0
    return main_mb + num_workers * (worker_start_mb + worker_growth_mb) + in_flight + batch_mb + pinned


if __name__ == "__main__":
    image_batch_mb = 64 * 3 * 224 * 224 * 4 / 2**20  # 64 float32 images of 3 x 224 x 224
    print(f"{loader_budget_mb(2000, 500, image_batch_mb, num_workers=8):.0f} MB")
