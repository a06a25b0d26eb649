"""Checkpoint a running epoch and resume it exactly with torchdata's StatefulDataLoader (notebook 13).

A plain DataLoader has no state_dict. A StatefulDataLoader saves the sampler's position and
generator and the workers' base seed; randomness your Dataset draws from a generator of its own
is saved only if the Dataset has state_dict / load_state_dict (then in every worker). The
generator follows the one seeding recipe (worker_seeding.py, notebook 07): the dataset keeps a
seed and each worker builds its generator from the worker's seed and that seed. Resume with the
num_workers you saved with: torchdata checks it with a bare assert, which python -O removes, so
check it yourself.
"""

import numpy as np
import torch
from torch.utils.data import Dataset, get_worker_info
from torchdata.stateful_dataloader import StatefulDataLoader


class NoisySamples(Dataset):
    """samples[i] plus noise from a generator built in each worker, and saved with the loader's state."""

    def __init__(self, samples, noise=0.1, seed=0):
        self.samples, self.noise, self.seed = samples, noise, seed  # keep the seed, not a generator
        self.rng, self.rng_seed = None, None

    def __len__(self):
        return len(self.samples)

    def generator(self):
        info = get_worker_info()
        seed = info.seed if info is not None else torch.initial_seed()
        if seed != self.rng_seed:  # first draw in this worker (a new worker, a new seed)
            self.rng, self.rng_seed = np.random.default_rng([seed, self.seed]), seed
        return self.rng

    def __getstate__(self):  # workers build their own generator: never send one
        return {**self.__dict__, "rng": None, "rng_seed": None}

    def __getitem__(self, index):
        sample = self.samples[index]
        noise = torch.as_tensor(self.generator().standard_normal(tuple(sample.shape)), dtype=sample.dtype)
        return sample + self.noise * noise

    def state_dict(self):  # with load_state_dict: StatefulDataLoader saves it in every worker
        return {"generator": self.generator().bit_generator.state}

    def load_state_dict(self, state):  # in each new worker: its own generator, moved to the saved state
        self.generator().bit_generator.state = state["generator"]


def make_loader(dataset, batch_size=64, num_workers=2, seed=0):
    """The same loader at the start and after a restart: same seed, same num_workers."""
    return StatefulDataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                              generator=torch.Generator().manual_seed(seed))


def save_checkpoint(path, loader, model, optimizer):
    """Save the model, the optimizer and the loader's position in the epoch (between two batches)."""
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "loader": loader.state_dict(), "num_workers": loader.num_workers}, path)


def resume(path, loader, model, optimizer):
    """Restore a checkpoint: the next `for batch in loader` continues the saved epoch."""
    checkpoint = torch.load(path, weights_only=True)
    if checkpoint["num_workers"] != loader.num_workers:  # torchdata's check is a bare assert
        raise ValueError(f"resume with num_workers={checkpoint['num_workers']} as saved, "
                         f"not {loader.num_workers}")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    loader.load_state_dict(checkpoint["loader"])
