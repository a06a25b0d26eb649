"""Written by notebook 04 (04_custom_dataset_and_caching.ipynb), section 2: a cache of decoded samples."""

import torch
from torch.utils.data import Dataset


class CachedImages(Dataset):
    """Wraps a map-style dataset of (image, label): decodes each sample once, then reads memory."""

    def __init__(self, dataset, preload: bool = True):
        self.dataset = dataset
        image, _ = dataset[0]
        # One tensor indexed by position, not a dict of tensors: pickled for a spawn or forkserver
        # worker, each tensor travels as a file descriptor; forkserver fails at 256 ("too many fds").
        self.images = torch.empty((len(dataset), *image.shape), dtype=image.dtype)
        self.labels = torch.empty(len(dataset), dtype=torch.long)
        self.filled = torch.zeros(len(dataset), dtype=torch.bool)
        if preload:  # decode everything now, in this process, before any worker starts
            for index in range(len(dataset)):
                self[index]

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.filled[index]:
            self.images[index], self.labels[index] = self.dataset[index]
            self.filled[index] = True
        return self.images[index], self.labels[index]
