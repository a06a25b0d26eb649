"""The snippets shown in notebooks 02, 03 and 19 ("In your own code") do what the notebooks say."""

from __future__ import annotations

import time

import pytest
import torch
from course_code import snippet
from torch.utils.data import Dataset, TensorDataset

from loaderlab.loaders import same_batches


def test_training_drops_the_tiny_batch_validation_sees_every_sample_once():
    data = TensorDataset(torch.arange(65))
    train, val = snippet("drop_last_and_debug_order").train_and_val_loaders(data, data, batch_size=32)
    assert [len(b[0]) for b in train] == [32, 32]
    assert torch.cat([b[0] for b in val]).tolist() == list(range(65))


def test_debug_loader_repeats_its_batches_and_mixes_sorted_data():
    make = snippet("drop_last_and_debug_order").debug_loader
    data = TensorDataset(torch.arange(64) // 32)  # stored sorted: 32 of class 0, then 32 of class 1
    assert same_batches(make(data, batch_size=16), make(data, batch_size=16))
    assert all(len(b[0].unique()) == 2 for b in make(data, batch_size=16))
    assert not same_batches(make(data, batch_size=16, seed=0), make(data, batch_size=16, seed=1))


class SlowReads(Dataset):
    """Each read waits 20 ms, like a remote disk (workers overlap the waits)."""

    def __len__(self):
        return 32

    def __getitem__(self, index):
        time.sleep(0.02)
        return torch.tensor([float(index)]), index % 2


@pytest.mark.course
@pytest.mark.filterwarnings("ignore:This DataLoader will create")  # 4 sleeping workers on 2 cores: on purpose
def test_the_sweep_finds_that_workers_overlap_slow_reads(no_leaked_workers):
    sweep = snippet("choose_num_workers").sweep_num_workers(SlowReads(), counts=(0, 4), batch_size=4)
    assert sweep[4] >= 2 * sweep[0], sweep


@pytest.mark.parametrize("num_workers", [0, 2])
def test_fast_loader_drops_the_tiny_batch_and_keeps_its_workers(num_workers, no_leaked_workers):
    loader = snippet("choose_num_workers").fast_loader(
        TensorDataset(torch.arange(65.0)), num_workers, batch_size=32
    )
    assert [len(b[0]) for b in loader] == [32, 32]
    assert loader.persistent_workers == (num_workers > 0)
    assert loader.prefetch_factor == (2 if num_workers else None)
    del loader
