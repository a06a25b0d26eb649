"""Slow samples without a stalled loop: in_order=False (notebook 14, section 4).

With in_order=True (the default) batch i+1 waits for batch i. With in_order=False
(torch >= 2.6) the loader hands over batches as the workers finish them.

The batches are the same, their order depends on timing: a run cannot be replayed batch for
batch, and the slow samples' batches come later in the epoch (a skew if slowness goes with
content, e.g. big images). Not with StatefulDataLoader checkpoints (notebook 13).
"""

from torch.utils.data import DataLoader


def out_of_order_loader(dataset, batch_size=64, shuffle=True, num_workers=4):
    """Batches come as the workers finish them; their order depends on timing."""
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, num_workers=num_workers,
                      in_order=False)  # torch >= 2.6
