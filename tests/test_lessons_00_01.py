"""The lesson modules written by notebooks 00 and 01 (notebooks/lesson00_who_fetches.py,
lesson01_image_files.py)."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
import torch
from course_code import lesson
from PIL import Image
from torch.utils.data import DataLoader

from loaderlab.data import make_image_folder
from loaderlab.env import can_fork


@pytest.mark.course
def test_slow_dataset_waits_per_sample_and_returns_the_index():
    lesson00_who_fetches = lesson("lesson00_who_fetches")
    dataset = lesson00_who_fetches.SlowDataset(n=5, latency_s=0.02, dim=3)
    start = time.perf_counter()
    x, y = dataset[3]
    assert time.perf_counter() - start >= 0.02  # a lower bound: a sleep never ends early
    assert len(dataset) == 5 and x.tolist() == [3.0, 3.0, 3.0] and y == 1


@pytest.mark.skipif(not can_fork(), reason="the module is loaded from a path: workers get it by fork")
def test_who_fetches_names_the_main_process_and_the_workers(no_leaked_workers):
    lesson00_who_fetches = lesson("lesson00_who_fetches")
    assert lesson00_who_fetches.WhoFetches(4)[2] == (2, os.getpid(), -1)
    loader = DataLoader(
        lesson00_who_fetches.WhoFetches(4), batch_size=2, num_workers=2, multiprocessing_context="fork"
    )
    rows = [
        (i, pid, w)
        for idx, pids, ws in loader
        for i, pid, w in zip(idx.tolist(), pids.tolist(), ws.tolist(), strict=True)
    ]
    assert [w for _, _, w in rows] == [0, 0, 1, 1]
    assert len({pid for _, pid, _ in rows}) == 2 and os.getpid() not in {pid for _, pid, _ in rows}


def test_image_files_decode_to_uint8_channels_first(tmp_path):
    lesson01_image_files = lesson("lesson01_image_files")
    paths = make_image_folder(tmp_path, n=3, size=16, n_grayscale=1)
    dataset = lesson01_image_files.ImageFiles(paths, labels=[7, 8, 9, 10])
    image, label = dataset[1]
    with Image.open(paths[1]) as pil:
        expected = np.array(pil.convert("RGB"))
    assert len(dataset) == 4 and label == 8
    assert image.dtype == torch.uint8 and image.shape == (3, 16, 16)
    assert torch.equal(image, torch.from_numpy(expected).permute(2, 0, 1))
    assert dataset[3][0].shape == (3, 16, 16)  # grayscale files come out as RGB
