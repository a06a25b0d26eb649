"""Pad variable-length sequences in collate_fn, with a padding mask in PyTorch's convention.

Padding to the longest sequence *of the batch* happens in collate_fn, the only place that sees
the whole batch. The mask is True at *padding*, as `nn.MultiheadAttention(key_padding_mask=...)`
and `nn.TransformerEncoder(src_key_padding_mask=...)` take it; Hugging Face's `attention_mask` is
the opposite (1 at real tokens): `~padding_mask`. Notebook 05 writes this same function into its
lesson module.
"""

import torch
from torch.nn.utils.rnn import pad_sequence


def pad_collate(batch, pad_value=0):
    """Pad to the batch's longest sequence: (padded [B, T], padding_mask [B, T], labels [B])."""
    tokens, labels = zip(*batch, strict=True)
    lengths = torch.tensor([len(t) for t in tokens])
    padded = pad_sequence(tokens, batch_first=True, padding_value=pad_value)
    padding_mask = torch.arange(padded.shape[1]) >= lengths[:, None]  # True at padding, as torch.nn
    return padded, padding_mask, torch.tensor(labels)
