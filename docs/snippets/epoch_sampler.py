"""The epoch number reaches persistent workers with every index, from the sampler.

Persistent workers keep the dataset copy they started with: `dataset.epoch = e` set in the
main process never reaches them. Send the epoch with every index instead: the sampler runs in
the main process, and what it yields is what `__getitem__` receives. Notebook 20, section 4.
"""

from torch.utils.data import DataLoader, Dataset, Sampler


class EpochSampler(Sampler):
    """Yields (index, epoch); call set_epoch(epoch) before each epoch, as with DistributedSampler."""

    def __init__(self, n):
        self.n, self.epoch = n, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        return ((i, self.epoch) for i in range(self.n))

    def __len__(self):
        return self.n


class EpochAware(Dataset):
    """Receives (index, epoch) and can vary augmentation or curriculum by epoch."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index_and_epoch):
        index, epoch = index_and_epoch
        return index, epoch


def train(dataset, epochs, step):
    sampler = EpochSampler(len(dataset))
    loader = DataLoader(dataset, sampler=sampler, batch_size=4, num_workers=2, persistent_workers=True)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)  # sampler yields (index, epoch)
        for batch in loader:
            step(batch)
