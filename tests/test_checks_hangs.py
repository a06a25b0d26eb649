"""Lab 08 checker: each wrong hang "fix" rejected for its own reason, right ones accepted."""

from __future__ import annotations

import contextlib
import importlib
import pickle
import threading

import pytest
from torch.utils.data import DataLoader, get_worker_info

from loaderlab.checks.lab08 import check_hang_fix
from loaderlab.labs.lab08 import ResourceClient, epoch_with_lock_held

# The lab's dataset, written by the solution's %%writefile lab08.py cell; solutions/ is on
# pytest's pythonpath (pyproject), so spawned workers, which import it by name, find it too.
ClientDataset = importlib.import_module("lab08").ClientDataset

pytestmark = pytest.mark.usefixtures("no_leaked_workers")


def verdict(capsys, candidate, make_dataset=ClientDataset) -> tuple[bool, str]:
    ok = check_hang_fix(candidate, make_dataset)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "Traceback" not in out, out
    return ok, out.strip()


# ------------------------------------------------------------------ student answers


def _new_lock(worker_id):
    get_worker_info().dataset.client.lock = threading.Lock()


def _new_client(worker_id):
    get_worker_info().dataset.client = ResourceClient()


def _no_lock(worker_id):
    get_worker_info().dataset.client.lock = contextlib.nullcontext()


def _release_inherited(worker_id):
    lock = get_worker_info().dataset.client.lock
    if lock.locked():
        lock.release()


def _stub_init(worker_id):
    raise NotImplementedError("your code here")


def original_loader(dataset):
    return DataLoader(dataset, batch_size=4, num_workers=2)


def new_lock_per_worker(dataset):
    return DataLoader(dataset, batch_size=4, num_workers=2, worker_init_fn=_new_lock)


def new_client_per_worker(dataset):
    return DataLoader(dataset, batch_size=4, num_workers=2, worker_init_fn=_new_client, timeout=5)


def spawned_workers(dataset):
    return DataLoader(dataset, batch_size=4, num_workers=2, multiprocessing_context="spawn")


def zero_workers(dataset):
    return DataLoader(dataset, batch_size=4, num_workers=0)


def lock_removed(dataset):
    return DataLoader(dataset, batch_size=4, num_workers=2, worker_init_fn=_no_lock)


def inherited_lock_released(dataset):
    return DataLoader(dataset, batch_size=4, num_workers=2, worker_init_fn=_release_inherited)


def short_timeout_only(dataset):
    return DataLoader(dataset, batch_size=4, num_workers=2, timeout=2)


def long_timeout_only(dataset):
    return DataLoader(dataset, batch_size=4, num_workers=2, timeout=30)


def half_the_items(dataset):
    return DataLoader(
        dataset, batch_size=4, num_workers=2, worker_init_fn=_new_lock, sampler=range(0, len(dataset), 2)
    )


def returns_the_dataset(dataset):
    return dataset


def stub(dataset):
    raise NotImplementedError("your code here")


def stub_in_worker(dataset):
    return DataLoader(dataset, batch_size=4, num_workers=2, worker_init_fn=_stub_init)


def crashes(dataset):
    return DataLoader(dataset, batch_size=4, num_workers=2, prefetch_factor=-1)


# ------------------------------------------------------------------------- checker


@pytest.mark.course
@pytest.mark.parametrize("candidate", [new_lock_per_worker, new_client_per_worker, spawned_workers])
def test_a_lock_made_where_it_is_used_is_accepted(capsys, candidate):
    ok, out = verdict(capsys, candidate)
    assert ok and out.startswith("✅ all 16 items read under a lock of each worker's own"), out


@pytest.mark.course
@pytest.mark.parametrize(
    ("candidate", "phrase"),
    [
        (original_loader, "the epoch hangs: the workers wait for ever on the lock they inherited"),
        (zero_workers, "num_workers=0: the contract keeps loading in 2 worker processes"),
        (lock_removed, "without holding a real lock: removing the lock trades the hang for a race"),
        (inherited_lock_released, "used the lock the worker inherited from the main process"),
        (short_timeout_only, "timeout= only turns the hang into an error"),
        (long_timeout_only, "timeout= only turns the hang into an error"),
        (half_the_items, "the epoch yielded 8 items"),
        (returns_the_dataset, "make_loader must return a DataLoader, got ClientDataset"),
    ],
)
def test_wrong_fixes_are_rejected_with_their_reason(capsys, candidate, phrase):
    ok, out = verdict(capsys, candidate)
    assert not ok and out.startswith("❌") and phrase in out, out


@pytest.mark.course
def test_stubs_are_pending_and_a_crash_is_one_line(capsys):
    assert verdict(capsys, stub) == (False, "⏳ not attempted yet")
    assert verdict(capsys, stub_in_worker) == (False, "⏳ not attempted yet")
    ok, out = verdict(capsys, crashes)
    assert not ok and out.startswith("❌ your code raised ValueError: prefetch_factor"), out


@pytest.mark.parametrize(
    ("make_dataset", "phrase"),
    [
        (ClientDataset(), "pass the dataset's class as the second argument"),
        (lambda: list(range(16)), "must build the lab's ClientDataset"),
        (lambda: ClientDataset(n=8), "has 16 items, this one has 8"),
        (lambda: 1 / 0, "ClientDataset() failed: ZeroDivisionError"),
    ],
)
def test_a_wrong_dataset_is_answered_with_one_sentence(capsys, make_dataset, phrase):
    ok, out = verdict(capsys, new_lock_per_worker, make_dataset)
    assert not ok and out.startswith("❌") and phrase in out, out


# ------------------------------------------------------------------------- helpers


@pytest.mark.course
def test_the_original_loader_times_out_within_its_bound_and_the_lock_is_released():
    dataset = ClientDataset()
    outcome = epoch_with_lock_held(original_loader(dataset))
    assert not outcome.finished and outcome.rows == []
    assert outcome.error == "TimeoutError: the client's lock was not acquired within 3 s"
    assert outcome.start_method == "fork"
    assert not dataset.client.lock.locked()  # the background holder let go
    assert dataset[3].tolist() == [3, 1, 1]  # and the main process can read again


def test_client_reads_report_guard_and_owner_and_pickles_with_a_new_lock():
    client = ResourceClient(give_up_s=0.2)
    assert client.read(5) == (5, 1, 1) and client.reads == 1
    with client.held_in_background():
        with pytest.raises(TimeoutError, match="within 0.2 s"):
            client.read(0)
        copy = pickle.loads(pickle.dumps(client))
        assert copy.read(1) == (1, 1, 1)  # its own, unlocked lock
    client.lock = contextlib.nullcontext()
    assert client.read(2) == (2, 0, 1)
    client.lock = threading.RLock()  # held by the reading thread: guarded
    assert client.read(3) == (3, 1, 1) and not client.lock._is_owned()
    with pytest.raises(ValueError, match="give_up_s"):
        ResourceClient(give_up_s=0)
    with pytest.raises(TypeError, match="ClientDataset"):
        epoch_with_lock_held(DataLoader(range(4)))
