"""Notebook 06's snippet (docs/snippets/packed_rows.py): Captions returns every row exactly (also
non-ASCII and trailing spaces) from two tensors, through workers, and train()
freezes the collector before the first epoch, and its two tensors stay shared (measured: each
worker's USS and PSS) under fork (make test), spawn and forkserver (make test-spawn)."""

from __future__ import annotations

import gc
import importlib
import multiprocessing
from pathlib import Path

import psutil
import pytest
import torch
from course_code import ROOT, snippet
from torch.utils.data import DataLoader, Dataset

from loaderlab.labs.lab06 import caption_rows


def test_captions_keep_the_table_in_two_tensors_and_return_every_row():
    rows = caption_rows(5_000, seed=1)
    captions = snippet("packed_rows").Captions(rows)
    tensors = [v for v in vars(captions).values() if isinstance(v, torch.Tensor)]
    assert len(tensors) == 2 and len(vars(captions)) == 2  # nothing else: no list of rows kept
    assert len(captions) == len(rows) and [captions[i] for i in range(len(rows))] == rows


def test_captions_reach_workers_intact(no_leaked_workers):
    rows = caption_rows(2_000, seed=2)
    loader = DataLoader(snippet("packed_rows").Captions(rows), batch_size=500, num_workers=2)
    assert [row for batch in loader for row in batch] == rows


def test_train_freezes_the_collector_and_runs_every_epoch():
    seen = []
    try:
        snippet("packed_rows").train(DataLoader(range(6), batch_size=3), epochs=2, step=seen.append)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert [b.tolist() for b in seen] == [[0, 1, 2], [3, 4, 5]] * 2


class ReadsEveryPage(Dataset):
    """Two samples; each reads every page of ``table`` through its ``__getitem__`` and returns this
    worker's (USS, PSS) in MB: what the worker holds once it has read the whole table."""

    def __init__(self, table, step: int):
        self.table, self.step = table, step

    def __len__(self) -> int:
        return 2

    def __getitem__(self, k: int) -> torch.Tensor:
        for i in range(0, len(self.table), self.step):
            self.table[i]
        info = psutil.Process().memory_full_info()
        return torch.tensor([info.uss, info.pss], dtype=torch.float64) / 2**20


class NumpyCaptions(Dataset):
    """The negative control: Captions' two arrays kept as NumPy arrays, which a pickle copies."""

    def __init__(self, captions):
        self.buffer, self.offsets = captions.buffer.numpy(), captions.offsets.numpy()

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> str:
        return self.buffer[self.offsets[i] : self.offsets[i + 1]].tobytes().decode()


def _worker_memory_mb(table, method: str) -> tuple[float, float]:
    """Mean (USS, PSS) in MB of 2 workers started by ``method`` that have read every page of ``table``."""
    loader = DataLoader(
        ReadsEveryPage(table, step=16),
        batch_size=None,
        num_workers=2,
        multiprocessing_context=method,
        timeout=120,
    )
    uss, pss = torch.stack(list(loader)).mean(0).tolist()
    return uss, pss


# fork in make test; spawn and forkserver start every worker by importing torch anew (~20 s of
# CPU between them), so they are release checks (make test-spawn), as the markers say.
METHODS = [
    "fork",
    pytest.param("spawn", marks=pytest.mark.spawn),
    pytest.param("forkserver", marks=pytest.mark.forkserver),
]


@pytest.mark.course
@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="USS/PSS need Linux's /proc")
@pytest.mark.parametrize("method", METHODS)
def test_packed_rows_stay_shared_in_workers(method, monkeypatch, no_leaked_workers):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"{method} is not a start method here")
    # The workers import the snippet and this module by name: both directories are on the path
    # that spawn and forkserver hand to every worker.
    monkeypatch.syspath_prepend(str(ROOT / "docs" / "snippets"))
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    packed_rows = importlib.import_module("packed_rows")
    rows = [f"{i:09d} " + "caption " * 14 for i in range(400_000)]  # 122 bytes a row: ~49 MB
    # The baseline first, while the big table does not exist yet (a forked worker inherits it).
    base_uss, base_pss = _worker_memory_mb(packed_rows.Captions(rows[:1_000]), method)
    big = packed_rows.Captions(rows)
    table_mb = (big.buffer.nbytes + big.offsets.nbytes) / 2**20
    uss, pss = _worker_memory_mb(big, method)
    growth = {"uss": uss - base_uss, "pss": pss - base_pss}
    if method != "fork":  # the same bytes as NumPy arrays: a private copy in each worker
        growth["numpy uss"] = _worker_memory_mb(NumpyCaptions(big), method)[0] - base_uss
    print(
        f"{method}: table {table_mb:.0f} MB; per-worker growth over a 1,000-row table (MB):",
        {k: round(v, 1) for k, v in growth.items()},
    )
    # Shared: the worker's private memory (USS) grows by under 20 % of the table (a few MB of
    # its own pages against ~50 MB; measured 0), and its PSS by under 60 %: the pages are split
    # between the main process and the 2 workers (about a third each once all three hold them).
    assert growth["uss"] < 0.20 * table_mb, growth
    assert growth["pss"] < 0.60 * table_mb, growth
    if "numpy uss" in growth:  # the measure sees a copy when there is one: over 75 % of the table
        assert growth["numpy uss"] > 0.75 * table_mb, growth
