"""Notebook 08's snippets: a file opened per process reads the right records in forked workers
and pickles without its file; the sampler that sends the epoch with every index reaches
persistent workers."""

from __future__ import annotations

import multiprocessing
import pickle

import pytest
from course_code import snippet
from torch.utils.data import DataLoader

pytestmark = pytest.mark.usefixtures("no_leaked_workers")


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_records_file_opened_per_process_reads_the_right_records_in_forked_workers(tmp_path):
    path = tmp_path / "records.bin"
    path.write_bytes(b"".join(b"%7d\n" % i for i in range(64)))
    dataset = snippet("per_process_resources").RecordsFile(str(path), record_size=8, n=64)
    assert dataset[5] == b"      5\n"  # the main process opens its own file first
    loader = DataLoader(dataset, batch_size=4, num_workers=2, multiprocessing_context="fork",
                        collate_fn=lambda batch: [int(r) for r in batch])
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
    assert [sorted(set(sum(seen[i:i + 2], []))) for i in (0, 2, 4)] == [[0], [1], [2]]
    sampler = module.EpochSampler(3)
    sampler.set_epoch(7)
    assert list(sampler) == [(0, 7), (1, 7), (2, 7)] and len(sampler) == 3
