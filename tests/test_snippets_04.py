"""Notebook 04's snippet (docs/snippets/image_dataset.py): MyImages batches a folder mixing RGB,
grayscale and RGBA files with 2 workers and returns what the lesson's ImageFiles returns with
mode="RGB"; in_memory_loader hands out every row once, a whole batch per indexing."""

from __future__ import annotations

import torch
from course_code import lesson, snippet
from torch.utils.data import DataLoader

from loaderlab.data import make_image_folder


def test_my_images_batches_a_mixed_folder_like_the_lessons_image_files(tmp_path, no_leaked_workers):
    paths = make_image_folder(tmp_path, n=5, size=40, n_grayscale=1, n_rgba=1, seed=4)
    labels = list(range(len(paths)))
    lesson04_image_files = lesson("lesson04_image_files")
    mine = snippet("image_dataset").MyImages(paths, labels, lesson04_image_files.ResizeToTensor(32))
    xb, yb = next(iter(DataLoader(mine, batch_size=len(paths), num_workers=2)))
    assert xb.shape == (7, 3, 32, 32) and yb.tolist() == labels
    resize = lesson04_image_files.ResizeToTensor(32)
    theirs = lesson04_image_files.ImageFiles(paths, labels, transform=resize, mode="RGB")
    assert all(torch.equal(mine[i][0], theirs[i][0]) for i in range(len(paths)))


def test_in_memory_loader_yields_every_row_once_in_whole_batches():
    x, y = torch.arange(1000.0)[:, None], torch.arange(1000)
    batches = list(snippet("image_dataset").in_memory_loader(x, y, batch_size=256))
    assert [len(xb) for xb, _ in batches] == [256, 256, 256, 232]
    seen = torch.cat([yb for _, yb in batches])
    assert sorted(seen.tolist()) == list(range(1000)) and seen.tolist() != list(range(1000))
    assert all(torch.equal(xb[:, 0].long(), yb) for xb, yb in batches)
