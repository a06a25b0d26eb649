"""Written by notebook 21, section 2: a folder of JPEGs read as tensors; ways to live with broken files."""

from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset, default_collate


def load(path) -> torch.Tensor:
    """Decode one JPEG into a 3 x H x W uint8 tensor (a writable copy; Pillow decodes at convert)."""
    with Image.open(path) as image:
        return torch.from_numpy(np.array(image.convert("RGB"))).permute(2, 0, 1)


class JpegFolder(Dataset):
    """Image i of a folder of JPEGs, sorted by name."""

    def __init__(self, root):
        self.paths = sorted(Path(root).glob("*.jpg"))

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        return load(self.paths[index])


class NamedErrors(JpegFolder):
    """Says which sample failed: the index and the file travel in the message torch forwards."""

    def __getitem__(self, index):
        try:
            return load(self.paths[index])
        except OSError as error:  # Pillow's UnidentifiedImageError is an OSError too
            raise RuntimeError(f"sample {index} ({self.paths[index].name}) unreadable: {error}") from error


class NoneOnError(JpegFolder):
    """The common hack: return None for a file that cannot be read."""

    def __getitem__(self, index):
        try:
            return load(self.paths[index])
        except OSError:
            return None


def skip_none_collate(batch):
    """Drop the Nones and collate the rest; None when nothing is left (the loop skips it)."""
    batch = [sample for sample in batch if sample is not None]
    return default_collate(batch) if batch else None


def readable_indices(paths) -> list:
    """The indices of the files that decode: scan once, before training."""
    good = []
    for index, path in enumerate(paths):
        try:
            load(path)
        except OSError:
            continue
        good.append(index)
    return good
