"""Written by notebook 01 (01_manual_loop_vs_dataloader.ipynb), section 1: one decode per sample."""

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset


class ImageFiles(Dataset):
    """Decodes one image file per __getitem__: returns (uint8 tensor [3, H, W], label)."""

    def __init__(self, paths: list, labels: list[int]):
        self.paths, self.labels = [str(p) for p in paths], list(labels)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        with Image.open(self.paths[index]) as image:
            pixels = np.array(image.convert("RGB"))  # read and decode: the costly part
        # [H, W, 3] -> [3, H, W], still uint8 (a quarter of the bytes of float32)
        return torch.from_numpy(pixels).permute(2, 0, 1), self.labels[index]
