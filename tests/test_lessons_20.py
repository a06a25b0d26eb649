"""Notebook 20's lesson modules (notebooks/lesson20_*.py, written by its %%writefile cells): a lazily
opened record file and HDF5 file read the right rows in forked workers and pickle without their
file, the epoch reaches the dataset through the sampler or shared memory, and the script that
quits mid-epoch reports daemonic workers."""

from __future__ import annotations

import multiprocessing
import os
import pickle

import h5py
import numpy as np
import pytest
import torch
from course_code import ROOT, lesson
from torch.utils.data import DataLoader

pytestmark = pytest.mark.usefixtures("no_leaked_workers")


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_record_files_read_right_in_the_main_process_and_lazily_in_forked_workers(tmp_path):
    module = lesson("lesson20_records")
    path = tmp_path / "records.bin"
    path.write_bytes(b"".join(b"%7d\n" % i for i in range(100)))
    assert [module.RecordFile(str(path), 16, decode_s=0)[i] for i in (3, 4, 9)] == [3, 4, 9]
    loader = DataLoader(
        module.LazyRecordFile(str(path), 32, decode_s=0.001),
        batch_size=4,
        num_workers=2,
        multiprocessing_context="fork",
    )
    assert torch.cat(list(loader)).tolist() == list(range(32))
    with pytest.raises(TypeError, match="cannot pickle"):
        pickle.dumps(module.RecordFile(str(path), 16))
    assert pickle.loads(pickle.dumps(module.LazyRecordFile(str(path), 16)))[7] == 7


def test_the_epoch_travels_with_the_index_or_through_shared_memory():
    module = lesson("lesson20_epochs")
    dataset, shared = module.EpochDataset(4), module.SharedEpochDataset(4)
    dataset.epoch, shared.epoch = 2, 3
    assert dataset[1][:2].tolist() == [1, 2] and shared[1][:2].tolist() == [1, 3]
    assert dataset[(1, 5)][:2].tolist() == [1, 5]
    sampler = module.EpochSampler(3)
    sampler.set_epoch(4)
    assert list(sampler) == [(0, 4), (1, 4), (2, 4)] and len(sampler) == 3
    assert shared.shared.is_shared()


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_hdf5_rows_read_right_in_forked_workers_and_only_the_lazy_one_pickles(tmp_path):
    module = lesson("lesson20_hdf_rows")
    path = tmp_path / "rows.h5"
    with h5py.File(path, "w") as file:
        file.create_dataset("rows", data=np.arange(40).repeat(4).reshape(40, 4), chunks=(8, 4))
    eager, lazy = module.H5Rows(str(path)), module.LazyH5Rows(str(path))
    assert len(eager) == len(lazy) == 40 and eager[7].tolist() == lazy[7].tolist() == [7] * 4
    for dataset in (eager, lazy):
        loader = DataLoader(dataset, batch_size=8, num_workers=2, multiprocessing_context="fork")
        assert torch.cat(list(loader))[:, 0].tolist() == list(range(40))
    with pytest.raises(TypeError, match="h5py objects cannot be pickled"):
        pickle.dumps(eager)
    copy = pickle.loads(pickle.dumps(lazy))
    assert copy.file is None and copy[39].tolist() == [39] * 4
    eager.file.close()


@pytest.mark.course  # a bounded child Python that imports torch and starts 4 workers
def test_quit_mid_epoch_reports_four_daemonic_workers(monkeypatch):
    from loaderlab import bounded

    paths = [str(ROOT / "notebooks"), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))  # the child imports it
    module = lesson("lesson20_quit_mid_epoch")
    report = bounded.run_bounded(module.quit_mid_epoch, bound_s=60).report()
    assert report.finished, report.error
    assert report.value["workers"] == report.value["daemonic"] == 4
    assert report.returncode == 0 and report.left_running == 0
