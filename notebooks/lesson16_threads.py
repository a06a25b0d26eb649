"""Written by notebook 16, sections 1-2: slow datasets, a probe, the function threads map over batches."""

import os
import threading
import time

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset, default_collate, get_worker_info


class FetchBatch:
    """What a DataLoader worker does with one batch of indices: fetch the samples, collate them."""

    def __init__(self, dataset, collate_fn=default_collate):
        self.dataset, self.collate_fn = dataset, collate_fn

    def __call__(self, indices):
        return self.collate_fn([self.dataset[i] for i in indices])


class WhereLoaded(Dataset):
    """Returns where each sample was loaded: (process id, thread id, what get_worker_info() says)."""

    def __init__(self, n: int, latency_s: float):
        self.n, self.latency_s = n, latency_s

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[int, int, str]:
        time.sleep(self.latency_s)  # long enough for every worker to get a share
        info = get_worker_info()  # None outside a DataLoader worker process
        return os.getpid(), threading.get_native_id(), info.worker_method if info else "None"


class ResizeToTensor:
    """The transform: resizes a PIL image to size × size (C code that releases the GIL): returns uint8
    [3, size, size]. Notebook 04's returns floats; this one stops at PIL's work."""

    def __init__(self, size: int):
        self.size = size

    def __call__(self, image: Image.Image) -> torch.Tensor:
        image = image.convert("RGB").resize((self.size, self.size), Image.Resampling.BILINEAR)
        return torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1)


class ImageFiles(Dataset):
    """Decodes an image file on every read (C code that releases the GIL), then applies transform:
    returns (transform(image), 0)."""

    def __init__(self, paths: list, transform):
        self.paths, self.transform = [str(p) for p in paths], transform

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        with Image.open(self.paths[index]) as image:
            return self.transform(image), 0


class PythonLoop(Dataset):
    """Each read runs a pure-Python loop of `iterations` steps (holds the GIL throughout): returns
    (FloatTensor[4], label)."""

    def __init__(self, n: int, iterations: int):
        self.n, self.iterations = n, iterations

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        total = 0
        for step in range(self.iterations):  # bytecode: one thread at a time runs it
            total = (total + step * index) % 1_000_003
        return torch.full((4,), float(index)), total % 2
