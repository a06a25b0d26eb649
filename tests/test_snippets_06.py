"""Notebook 06's snippet (docs/snippets/packed_rows.py): Captions returns every row exactly (also
non-ASCII and trailing spaces) from two tensors, through workers, and train()
freezes the collector before the first epoch."""

from __future__ import annotations

import gc

import torch
from course_code import snippet
from torch.utils.data import DataLoader

from loaderlab.labs.memory import caption_rows


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

