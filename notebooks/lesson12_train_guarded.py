"""Lesson 12, section 5: the same training script with the __main__ guard (a fresh Python runs it)."""

from torch.utils.data import DataLoader

if __name__ == "__main__":  # False in a worker, which runs this file as __mp_main__
    loader = DataLoader(list(range(16)), batch_size=4, num_workers=1, multiprocessing_context="spawn")
    samples = 0
    for batch in loader:  # the training loop
        samples += len(batch)
    print("trained on", samples, "samples")
