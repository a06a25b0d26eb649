"""Notebook 20's snippets: a file and an HDF5 file opened per process read the right records in
forked workers and pickle without their file; the sampler that sends the epoch with every index reaches
persistent workers."""

from __future__ import annotations

import multiprocessing
import pickle

import h5py
import numpy as np
import pytest
import torch
from course_code import snippet
from torch.utils.data import DataLoader

pytestmark = pytest.mark.usefixtures("no_leaked_workers")


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_records_file_opened_per_process_reads_the_right_records_in_forked_workers(tmp_path):
    path = tmp_path / "records.bin"
    path.write_bytes(b"".join(b"%7d\n" % i for i in range(64)))
    dataset = snippet("per_process_resources").RecordsFile(str(path), record_size=8, n=64)
    assert dataset[5] == b"      5\n"  # the main process opens its own file first
    loader = DataLoader(
        dataset,
        batch_size=4,
        num_workers=2,
        multiprocessing_context="fork",
        collate_fn=lambda batch: [int(r) for r in batch],
    )
    assert [v for batch in loader for v in batch] == list(range(64))
    state = dataset.__getstate__()  # what spawn sends: no file, opened at the first read
    assert state["file"] is None and state["pid"] is None
    copy = type(dataset).__new__(type(dataset))
    copy.__dict__.update(state)
    assert copy[63] == b"     63\n"
    pickle.dumps(state)  # and it pickles


def test_fresh_workers_loader_starts_its_workers_with_forkserver():
    loader = snippet("per_process_resources").fresh_workers_loader(list(range(8)), num_workers=2)
    assert loader.num_workers == 2 and loader.multiprocessing_context.get_start_method() == "forkserver"


def test_epoch_sampler_sends_the_epoch_to_persistent_workers():
    module = snippet("epoch_sampler")
    seen = []
    module.train(module.EpochAware(8), epochs=3, step=lambda batch: seen.append(batch[1].tolist()))
    assert len(seen) == 6  # 2 batches of 4 per epoch
    assert [sorted(set(sum(seen[i : i + 2], []))) for i in (0, 2, 4)] == [[0], [1], [2]]
    sampler = module.EpochSampler(3)
    sampler.set_epoch(7)
    assert list(sampler) == [(0, 7), (1, 7), (2, 7)] and len(sampler) == 3


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_hdf5_dataset_opened_per_process_reads_the_right_rows_and_pickles_without_its_file(tmp_path):
    path = tmp_path / "rows.h5"
    with h5py.File(path, "w") as file:
        file.create_dataset(
            "images", data=np.arange(48).repeat(3).reshape(48, 3), chunks=(8, 3), compression="gzip"
        )
    dataset = snippet("hdf5_per_process").H5Dataset(str(path), "images")
    assert len(dataset) == 48 and dataset.file is None  # __init__ leaves no file open
    assert dataset[5].tolist() == [5, 5, 5]  # the main process opens its own file first
    loader = DataLoader(dataset, batch_size=8, num_workers=2, multiprocessing_context="fork")
    assert torch.cat(list(loader))[:, 0].tolist() == list(range(48))
    state = dataset.__getstate__()  # what spawn sends: no h5py object, opened at the first read
    assert state["file"] is None and state["rows"] is None and state["pid"] is None
    pickle.dumps(state)  # and it pickles
    copy = type(dataset).__new__(type(dataset))
    copy.__dict__.update(state)
    assert copy[47].tolist() == [47, 47, 47]
