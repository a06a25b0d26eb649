"""An image Dataset with its transform injected, and in-memory data fetched a batch at a time.

Notebook 04 writes the same Dataset (``ImageFiles``, with an optional ``mode``) into its lesson
module and measures both: the per-file decode, and whole-batch indexing of in-memory tensors.
"""

from PIL import Image
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler, TensorDataset


class MyImages(Dataset):  # one class, transform injected
    def __init__(self, paths, labels, transform):
        self.paths, self.labels, self.transform = paths, labels, transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with Image.open(self.paths[i]) as im:
            im = im.convert("RGB")  # 3 channels, always
        return self.transform(im), self.labels[i]  # transform resizes: one shape, always


def in_memory_loader(x, y, batch_size=256):
    """Data already in memory: no workers, and one indexing per batch (batch_size=None)."""
    sampler = BatchSampler(RandomSampler(x), batch_size=batch_size, drop_last=False)
    return DataLoader(TensorDataset(x, y), batch_size=None, sampler=sampler, num_workers=0)
