"""Notebook 08's lesson modules (notebooks/lesson08_locks*.py, written by its %%writefile cells): the
lock dataset waits on the module's lock and not on one made per process, a lazily opened
record file reads the right records in forked workers, the crashing dataset never kills the
main process, and the epoch reaches the dataset through the sampler or shared memory."""

from __future__ import annotations

import multiprocessing
import os
import pickle

import pytest
import torch
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


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_record_files_read_right_in_the_main_process_and_lazily_in_forked_workers(tmp_path):
    module = lesson("lesson08_records")
    path = tmp_path / "records.bin"
    path.write_bytes(b"".join(b"%7d\n" % i for i in range(100)))
    assert [module.RecordFile(str(path), 16, decode_s=0)[i] for i in (3, 4, 9)] == [3, 4, 9]
    loader = DataLoader(module.LazyRecordFile(str(path), 32, decode_s=0.001), batch_size=4, num_workers=2,
                        multiprocessing_context="fork")
    assert torch.cat(list(loader)).tolist() == list(range(32))
    with pytest.raises(TypeError, match="cannot pickle"):
        pickle.dumps(module.RecordFile(str(path), 16))
    assert pickle.loads(pickle.dumps(module.LazyRecordFile(str(path), 16)))[7] == 7


def test_crashing_dataset_fails_only_at_its_index_and_never_kills_the_main_process():
    module = lesson("lesson08_crashing")
    assert module.CrashingDataset(n=4, fail_at=1)[0].item() == 0
    with pytest.raises(ValueError, match="sample 1 is corrupt"):
        module.CrashingDataset(n=4, fail_at=1)[1]
    with pytest.raises(module.FetchError, match="truncated file"):
        module.CrashingDataset(n=4, fail_at=1, mode="custom")[1]
    with pytest.raises(RuntimeError, match="only kills worker processes"):
        module.CrashingDataset(n=4, fail_at=1, mode="kill")[1]


def test_the_epoch_travels_with_the_index_or_through_shared_memory():
    module = lesson("lesson08_epochs")
    dataset, shared = module.EpochDataset(4), module.SharedEpochDataset(4)
    dataset.epoch, shared.epoch = 2, 3
    assert dataset[1][:2].tolist() == [1, 2] and shared[1][:2].tolist() == [1, 3]
    assert dataset[(1, 5)][:2].tolist() == [1, 5]
    sampler = module.EpochSampler(3)
    sampler.set_epoch(4)
    assert list(sampler) == [(0, 4), (1, 4), (2, 4)] and len(sampler) == 3
    assert shared.shared.is_shared()


def test_run_loops_reports_batches_and_the_error_as_text():
    module = lesson("lesson08_crashing")
    report = module.run_loops({"ok": DataLoader(module.CrashingDataset(n=8, fail_at=1), batch_size=4,
                                                sampler=[4, 5, 6, 7]),
                               "raise": DataLoader(module.CrashingDataset(n=8, fail_at=5), batch_size=4)})
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
