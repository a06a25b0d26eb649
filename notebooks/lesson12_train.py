"""Lesson 12, section 5: a training script without the __main__ guard (a fresh Python runs it)."""

from torch.utils.data import DataLoader

loader = DataLoader(list(range(16)), batch_size=4, num_workers=1, multiprocessing_context="spawn")
samples = 0
for batch in loader:  # the training loop
    samples += len(batch)
print("trained on", samples, "samples")
