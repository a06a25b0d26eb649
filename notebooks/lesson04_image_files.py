"""Written by notebook 04 (04_custom_dataset_and_caching.ipynb), section 1: an image Dataset."""

from collections.abc import Callable

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset


def to_tensor(image: Image.Image) -> torch.Tensor:
    """A PIL image as a float tensor [C, H, W] in [0, 1]; C is the image's number of bands."""
    array = np.asarray(image)
    if array.ndim == 2:  # grayscale: one band, no channel axis
        array = array[:, :, None]
    return torch.from_numpy(array.copy()).permute(2, 0, 1).float() / 255


class ResizeToTensor:
    """A transform: resize to size x size, then to_tensor (a class, not a lambda, so it pickles)."""

    def __init__(self, size: int):
        self.size = size

    def __call__(self, image: Image.Image) -> torch.Tensor:
        return to_tensor(image.resize((self.size, self.size), Image.Resampling.BILINEAR))


class ImageFiles(Dataset):
    """Image i decoded from its file on every access: (transform(image), label)."""

    def __init__(self, paths, labels=None, transform: Callable = to_tensor, mode: str | None = None):
        self.paths = [str(p) for p in paths]
        self.labels = list(labels) if labels is not None else [0] * len(self.paths)
        self.transform, self.mode = transform, mode  # mode="RGB": one number of channels

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        with Image.open(self.paths[index]) as image:
            image = image.convert(self.mode) if self.mode else image.copy()
        return self.transform(image), self.labels[index]
