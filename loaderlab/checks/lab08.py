"""Lab 08 checker: a loader that no longer hangs on a lock inherited at fork time.

The dataset (``ClientDataset`` in ``lab08.py``) reads through a ``ResourceClient`` (think: a
connection pool) whose every read takes the client's lock; a background thread of the main process
holds that lock at times, and a worker forked then inherits a copy locked for ever.
``check_hang_fix(make_loader, ClientDataset)`` wants 2 workers, every read under a lock created in
the reading process, and a full epoch with the lock held while the workers start. Bounded: a worker
gives up on the lock after ``GIVE_UP_S`` s and the loader gets a timeout if it has none.
"""

from __future__ import annotations

from collections.abc import Callable

from torch.utils.data import DataLoader, Dataset

from loaderlab.checks.report import Wrong, checker, one_line
from loaderlab.labs.lab08 import ResourceClient, epoch_with_lock_held

N_ITEMS, WORKERS = 16, 2
HINT = "Hint: notebook 08, section 'A worker that waits forever', Fix 1 and Fix 2"


@checker
def check_hang_fix(candidate: Callable[[Dataset], DataLoader], make_dataset: Callable[[], Dataset]) -> str:
    """Return a confirmation if ``candidate(make_dataset())`` builds a 2-worker loader that
    finishes an epoch while the client's lock is held in the main process, every read under a
    lock that the reading process created. ``make_dataset`` is the lab's ``ClientDataset``."""
    if not callable(make_dataset) or isinstance(make_dataset, Dataset):
        raise Wrong(
            f"pass the dataset's class as the second argument, check_hang_fix(make_loader, "
            f"ClientDataset), got {type(make_dataset).__name__}"
        )
    try:
        dataset = make_dataset()
    except Exception as exc:
        raise Wrong(f"ClientDataset() failed: {one_line(exc)}") from None
    if not isinstance(dataset, Dataset) or not isinstance(getattr(dataset, "client", None), ResourceClient):
        raise Wrong(
            "the second argument must build the lab's ClientDataset (a Dataset that reads "
            "through a ResourceClient in .client)"
        )
    n = len(dataset)
    if n != N_ITEMS:
        raise Wrong(f"the lab's ClientDataset has {N_ITEMS} items, this one has {n}")
    loader = candidate(dataset)
    if not isinstance(loader, DataLoader):
        raise Wrong(f"make_loader must return a DataLoader, got {type(loader).__name__}")
    if loader.num_workers < WORKERS:
        raise Wrong(
            f"your loader has num_workers={loader.num_workers}: the contract keeps loading in "
            f"{WORKERS} worker processes (num_workers=0 avoids the hang only by giving up "
            f"parallel loading). {HINT}"
        )
    if not isinstance(getattr(loader.dataset, "client", None), ResourceClient):
        raise Wrong("your loader must read the dataset it was given (its .client is the resource). " + HINT)
    result = epoch_with_lock_held(loader)
    error = result.error
    if error and "your code here" in error:
        raise NotImplementedError("your code here")  # an unfinished stub ran in a worker: ⏳
    if error and ("not acquired within" in error or "timed out" in error):
        if 0 < loader.timeout:
            raise Wrong(
                f"the epoch still failed ({error}): timeout= only turns the hang into an error, "
                f"the workers still wait on the lock they inherited locked. {HINT}"
            )
        raise Wrong(
            f"the epoch hangs: the workers wait for ever on the lock they inherited locked "
            f"from the main process (this check gave up: {error}). {HINT}"
        )
    if error:
        raise Wrong(f"the epoch failed in a worker: {error}")
    indices = sorted(row[0] for row in result.rows)
    if indices != list(range(n)):
        raise Wrong(
            f"the epoch yielded {len(indices)} items ({len(set(indices))} distinct) instead of "
            f"each of the {n} indices once. {HINT}"
        )
    unguarded = sum(1 for row in result.rows if not row[1])
    if unguarded:
        raise Wrong(
            f"{unguarded} of {n} reads happened without holding a real lock: removing the lock "
            f"trades the hang for a race between threads. Give each worker its own lock "
            f"instead. {HINT}"
        )
    inherited = sum(1 for row in result.rows if not row[2])
    if inherited:
        raise Wrong(
            f"{inherited} of {n} reads used the lock the worker inherited from the main "
            f"process (released by hand?): what it guarded may be half-updated; create a new "
            f"lock or client in each worker instead. {HINT}"
        )
    return (
        f"all {n} items read under a lock of each worker's own, with the main process's lock "
        f"held while the {loader.num_workers} workers started"
    )
