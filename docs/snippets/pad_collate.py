"""Pad variable-length sequences in collate_fn, with an attention mask.

Padding to the longest sequence *of the batch* happens in collate_fn, the only place that sees
the whole batch. Notebook 05 writes this same function into its lesson module.
"""

import torch
from torch.nn.utils.rnn import pad_sequence


def pad_collate(batch, pad_value=0):
    """Pad to the batch's longest sequence: (padded [B, T], mask [B, T], labels [B])."""
    tokens, labels = zip(*batch, strict=True)
    lengths = torch.tensor([len(t) for t in tokens])
    padded = pad_sequence(tokens, batch_first=True, padding_value=pad_value)
    mask = torch.arange(padded.shape[1]) < lengths[:, None]  # True at real tokens
    return padded, mask, torch.tensor(labels)
