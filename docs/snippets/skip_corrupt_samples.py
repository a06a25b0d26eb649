"""Skip unreadable samples, say which one failed, and scan the files once.

One unreadable file ends the epoch, with an error that names the worker, not the sample, and
returning None alone fails in default_collate. Name the sample in your exception; scan the
files once and train on a Subset of the readable ones; keep a collate_fn that drops Nones (and
returns None for a batch with nothing left) as a guard for files that break later.
Notebook 21.
"""

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset, Subset, default_collate


def load_image(path):
    with Image.open(path) as image:
        return torch.from_numpy(np.array(image.convert("RGB"))).permute(2, 0, 1)


class ImageFiles(Dataset):
    """Image i of a list of files; an unreadable one raises with its index, or gives None."""

    def __init__(self, paths, skip_broken=False):
        self.paths, self.skip_broken = list(paths), skip_broken

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        try:
            return load_image(self.paths[i])
        except OSError as error:  # Pillow's UnidentifiedImageError is an OSError too
            if self.skip_broken:
                return None
            raise RuntimeError(f"sample {i} ({self.paths[i]}) unreadable: {error}") from error


def skip_broken_collate(batch):
    batch = [sample for sample in batch if sample is not None]
    return default_collate(batch) if batch else None  # the loop skips a None batch


def readable(paths):
    good = []
    for i, path in enumerate(paths):
        try:
            load_image(path)
        except OSError:
            continue
        good.append(i)
    return good


def clean_loader(paths, batch_size=32, num_workers=2):
    dataset = ImageFiles(paths, skip_broken=True)  # a file that breaks later is skipped
    return DataLoader(Subset(dataset, readable(paths)), batch_size=batch_size, shuffle=True,
                      drop_last=True, num_workers=num_workers, collate_fn=skip_broken_collate)
