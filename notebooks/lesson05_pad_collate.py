"""Written by notebook 05 (05_collate_and_padding.ipynb), section 2: pad in collate_fn."""

import torch
from torch.nn.utils.rnn import pad_sequence


def pad_collate(batch, pad_value=0):
    """Pad to the batch's longest sequence: (padded [B, T], padding_mask [B, T], labels [B])."""
    tokens, labels = zip(*batch, strict=True)
    lengths = torch.tensor([len(t) for t in tokens])
    padded = pad_sequence(tokens, batch_first=True, padding_value=pad_value)
    padding_mask = torch.arange(padded.shape[1]) >= lengths[:, None]  # True at padding, as torch.nn
    return padded, padding_mask, torch.tensor(labels)
