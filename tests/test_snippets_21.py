"""Notebook 21's snippet: a broken image raises with its index or is skipped; the collate_fn drops
Nones and returns None for an empty batch; the scan keeps the readable files; the clean loader
gives full batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from course_code import snippet
from PIL import Image

pytestmark = pytest.mark.usefixtures("no_leaked_workers")


@pytest.fixture
def folder(tmp_path):
    """20 JPEGs; 3 truncated to half, 2 empty."""
    rng = np.random.default_rng(0)
    paths = []
    for i in range(20):
        path = tmp_path / f"img_{i:02d}.jpg"
        Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(path)
        paths.append(path)
    for i in (2, 9, 15):
        paths[i].write_bytes(paths[i].read_bytes()[: paths[i].stat().st_size // 2])
    for i in (4, 5):
        paths[i].write_bytes(b"")
    return paths


def test_a_broken_image_raises_with_its_index_or_gives_none(folder):
    module = snippet("skip_corrupt_samples")
    strict, lenient = module.ImageFiles(folder), module.ImageFiles(folder, skip_broken=True)
    assert strict[0].shape == (3, 16, 16) and strict[0].dtype == torch.uint8
    with pytest.raises(RuntimeError, match=r"sample 9 \(.*img_09\.jpg\) unreadable: "):
        strict[9]
    with pytest.raises(RuntimeError, match=r"sample 4 .* unreadable: cannot identify image file"):
        strict[4]
    assert lenient[4] is None and lenient[9] is None and lenient[3].shape == (3, 16, 16)


def test_skip_broken_collate_drops_nones_and_returns_none_for_an_empty_batch():
    collate = snippet("skip_corrupt_samples").skip_broken_collate
    a, b = torch.zeros(3, 2, 2, dtype=torch.uint8), torch.ones(3, 2, 2, dtype=torch.uint8)
    batch = collate([None, a, None, b])
    assert batch.shape == (2, 3, 2, 2) and batch[1].eq(1).all()
    assert collate([None, None]) is None
    assert collate([a, b]).shape == (2, 3, 2, 2)


def test_scan_keeps_the_readable_files_and_the_clean_loader_gives_full_batches(folder):
    module = snippet("skip_corrupt_samples")
    good = module.readable(folder)
    assert good == [i for i in range(20) if i not in (2, 4, 5, 9, 15)]
    loader = module.clean_loader(folder, batch_size=4, num_workers=2)
    sizes = [len(batch) for batch in loader]
    assert len(loader) == 3 and sizes == [4, 4, 4]  # 15 readable, drop_last
