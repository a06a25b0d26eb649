"""Notebook 08's lesson modules (notebooks/lesson08_*.py, written by its %%writefile cells): the
lock dataset waits on the module's lock and not on one made per process, and the crashing
dataset never kills the main process."""

from __future__ import annotations

import os
import pickle

import pytest
from course_code import lesson
from torch.utils.data import DataLoader

pytestmark = pytest.mark.usefixtures("no_leaked_workers")


def test_locked_dataset_waits_on_the_module_lock_not_on_its_own():
    module = lesson("lesson08_locks")
    shared, own = module.LockedDataset(n=4, give_up_s=0.2), module.LockedDataset(n=4, per_process=True)
    with module.CLIENT_LOCK:
        with pytest.raises(TimeoutError, match="within 0.2 s"):
            shared[1]
        assert own[2].item() == 2  # a lock of this process, not the held one
    copy = pickle.loads(pickle.dumps(own))  # what spawn sends: no lock, made at first use
    assert copy.own_lock is None and copy[3].item() == 3


def test_crashing_dataset_fails_only_at_its_index_and_never_kills_the_main_process():
    module = lesson("lesson08_crashing")
    assert module.CrashingDataset(n=4, fail_at=1)[0].item() == 0
    with pytest.raises(ValueError, match="sample 1 is corrupt"):
        module.CrashingDataset(n=4, fail_at=1)[1]
    with pytest.raises(module.FetchError, match="truncated file"):
        module.CrashingDataset(n=4, fail_at=1, mode="custom")[1]
    with pytest.raises(RuntimeError, match="only kills worker processes"):
        module.CrashingDataset(n=4, fail_at=1, mode="kill")[1]


def test_run_loops_reports_batches_and_the_error_as_text():
    module = lesson("lesson08_crashing")
    report = module.run_loops(
        {
            "ok": DataLoader(module.CrashingDataset(n=8, fail_at=1), batch_size=4, sampler=[4, 5, 6, 7]),
            "raise": DataLoader(module.CrashingDataset(n=8, fail_at=5), batch_size=4),
        }
    )
    assert report["ok"] == {"batches": 1, "error": None, "type": None, "cause": None}
    assert report["raise"]["batches"] == 1 and report["raise"]["type"] == "ValueError"
    assert report["raise"]["error"] == "ValueError: sample 5 is corrupt" and report["raise"]["cause"] is None


def test_dump_stack_on_signal_writes_the_pid_and_skips_the_handler_without_sigusr1(tmp_path, monkeypatch):
    module = lesson("lesson08_locks")
    registered = []
    monkeypatch.setattr(module.faulthandler, "register", lambda *args, **kwargs: registered.append(args))
    module.DumpStackOnSignal(str(tmp_path))(0)
    assert (tmp_path / "worker-0.stack").read_text().split() == [str(os.getpid())]
    assert registered == ([(module.signal.SIGUSR1,)] if hasattr(module.signal, "SIGUSR1") else [])
    monkeypatch.delattr(module.signal, "SIGUSR1", raising=False)  # as on Windows
    registered.clear()
    module.DumpStackOnSignal(str(tmp_path))(1)
    assert registered == [] and (tmp_path / "worker-1.stack").read_text().split() == [str(os.getpid())]
