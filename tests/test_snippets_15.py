"""Notebook 15's snippet (docs/snippets/sharing_strategy.py): file_system_loader sets the
`file_system` strategy in the main process and in workers started by spawn, where setting it
in the main process alone leaves them at the default; raise_open_files_limit lifts the soft
limit; keep() returns copies that hold no shared memory."""

from __future__ import annotations

import gc
import importlib
import multiprocessing
import os
import resource
import sys

import pytest
import torch
import torch.multiprocessing as torch_mp
from course_code import ROOT
from torch.utils.data import DataLoader

LINUX = sys.platform.startswith("linux")

pytestmark = [
    pytest.mark.usefixtures("no_leaked_workers"),
    pytest.mark.skipif(not LINUX, reason="file_descriptor, the other strategy, is Linux only"),
]


@pytest.fixture
def sharing_strategy(monkeypatch):
    """The snippet imported by name (spawned workers import its worker_init_fn); the strategy
    of this process restored afterwards."""
    monkeypatch.syspath_prepend(str(ROOT / "docs" / "snippets"))
    before = torch_mp.get_sharing_strategy()
    yield importlib.import_module("sharing_strategy")
    torch_mp.set_sharing_strategy(before)


def strategy_of_worker(batch):
    """collate_fn: the sharing strategy of the worker that collates."""
    return torch_mp.get_sharing_strategy()


@pytest.mark.spawn
@pytest.mark.course
def test_file_system_loader_sets_the_strategy_in_spawned_workers_too(sharing_strategy):
    spawn = multiprocessing.get_context("spawn")
    torch_mp.set_sharing_strategy("file_descriptor")
    loader = sharing_strategy.file_system_loader(
        list(range(4)),
        batch_size=2,
        num_workers=1,
        collate_fn=strategy_of_worker,
        multiprocessing_context=spawn,
    )
    assert torch_mp.get_sharing_strategy() == "file_system"  # the main process
    assert list(loader) == ["file_system", "file_system"]  # and its worker
    # without the worker_init_fn, a spawned worker starts at the default
    main_only = DataLoader(
        list(range(4)),
        batch_size=2,
        num_workers=1,
        collate_fn=strategy_of_worker,
        multiprocessing_context=spawn,
    )
    assert list(main_only) == ["file_descriptor", "file_descriptor"]


SAMPLES = [(torch.full((2,), float(i)), i) for i in range(20)]


def held_descriptors(loader, keep=lambda batch: batch) -> int:
    """Descriptors this process holds once every batch of the loader is kept (workers stopped).
    Garbage is collected before each count: an earlier test's loader freed by the collector during
    the loop closes its pipes there and lowers the count (one Python 3.12 run counted 28 of 40)."""
    gc.collect()
    before = len(os.listdir("/proc/self/fd"))
    kept = [keep(batch) for batch in loader]
    assert len(kept) == len(SAMPLES)
    gc.collect()
    return len(os.listdir("/proc/self/fd")) - before


def test_kept_batches_hold_descriptors_unless_sent_by_name_or_copied(sharing_strategy):
    torch_mp.set_sharing_strategy("file_descriptor")
    plain = held_descriptors(DataLoader(SAMPLES, batch_size=1, num_workers=1))
    copies = held_descriptors(DataLoader(SAMPLES, batch_size=1, num_workers=1), keep=sharing_strategy.keep)
    by_name = held_descriptors(sharing_strategy.file_system_loader(SAMPLES, batch_size=1, num_workers=1))
    assert plain >= 2 * len(SAMPLES)  # one per tensor: features and labels of 20 batches
    assert copies < 5 and by_name < 5


def test_raise_open_files_limit_lifts_the_soft_limit_to_the_hard_one(sharing_strategy):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
        assert sharing_strategy.raise_open_files_limit() == hard
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
