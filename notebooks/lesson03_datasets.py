"""Written by notebook 03 (03_workers_and_prefetch.ipynb), sections 2 and 4: three datasets."""

import time

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset


class LatencyDataset(Dataset):
    """Each read waits latency_s (a remote disk; the CPU stays free): (FloatTensor[dim], label)."""

    def __init__(self, n: int, latency_s: float, dim: int = 8, seed: int = 0):
        generator = torch.Generator().manual_seed(seed)
        self.features = torch.randn(n, dim, generator=generator)
        self.labels = torch.randint(0, 2, (n,), generator=generator).tolist()
        self.latency_s = latency_s

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        time.sleep(self.latency_s)
        return self.features[index], self.labels[index]


class JpegDataset(Dataset):
    """Decodes a JPEG and shrinks it to size × size on every read (CPU-bound): (uint8 [3, size, size], 0)."""

    def __init__(self, paths: list, size: int = 128):
        self.paths, self.size = [str(p) for p in paths], size

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        with Image.open(self.paths[index]) as image:
            image = image.convert("RGB").resize((self.size, self.size))
        return torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1), 0


class SpikyDataset(Dataset):
    """Reads take base_s, every spike_every-th spike_s (a cold cache): (FloatTensor[dim], label)."""

    def __init__(self, n: int, base_s: float, spike_s: float, spike_every: int, dim: int):
        self.n, self.base_s, self.spike_s, self.spike_every, self.dim = n, base_s, spike_s, spike_every, dim

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        slow = (index + 1) % self.spike_every == 0
        time.sleep(self.spike_s if slow else self.base_s)
        return torch.full((self.dim,), float(index)), index % 2
