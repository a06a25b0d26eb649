"""Written by notebook 03 (03_workers_and_prefetch.ipynb), section 4: prefetched batches."""

from torch.utils.data import DataLoader

from loaderlab.loaders import stop_workers


def batches_in_flight(loader: DataLoader) -> int:
    """Batches requested from the workers before the first next() (0 without workers)."""
    if loader.num_workers == 0:
        return 0  # the main process loads a batch only when asked for it
    batches = iter(loader)  # starts the workers and sends the first requests (_reset)
    in_flight = batches._tasks_outstanding  # private counter of _MultiProcessingDataLoaderIter
    stop_workers(batches, kill=True)  # at once: no need to wait for them to finish starting
    loader._iterator = None  # with persistent workers the loader kept that iterator: forget it
    return in_flight
