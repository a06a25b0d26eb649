"""Written by notebook 04 (04_custom_dataset_and_caching.ipynb), section 3: whole batches at once."""

import torch
from torch.utils.data import Dataset


class BatchedTensors(Dataset):
    """(features[i], labels[i]) per index, or a whole batch per list of indices (__getitems__)."""

    def __init__(self, features: torch.Tensor, labels: torch.Tensor):
        self.features, self.labels = features, labels

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.features[index], self.labels[index]

    def __getitems__(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.as_tensor(indices)  # the fetcher calls this once per batch
        return self.features.index_select(0, index), self.labels.index_select(0, index)


def keep_batch(batch):
    """The collate_fn for __getitems__: its result is already a batch, so return it as is."""
    return batch
