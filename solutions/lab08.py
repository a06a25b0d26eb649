"""Lab 08: the dataset of the story (workers import this module)."""

import torch
from torch.utils.data import Dataset

# stands for a library's client (a connection pool); it notes how each read was guarded
from loaderlab.labs.lab08 import ResourceClient


class ClientDataset(Dataset):
    """Item i read through self.client: LongTensor([i, guarded, own]), [i, 1, 1] when read right."""

    def __init__(self, n: int = 16):
        self.n, self.client = n, ResourceClient()

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return torch.tensor(self.client.read(index))
