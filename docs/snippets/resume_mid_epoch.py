"""Checkpoint a running epoch and resume it exactly with torchdata's StatefulDataLoader (notebook 13).

A plain DataLoader has no state_dict. A StatefulDataLoader saves the sampler's position and
generator and the workers' base seed; randomness your Dataset draws from a generator of its own
is saved only if the Dataset has state_dict / load_state_dict (then in every worker, restored
after your worker_init_fn ran). Resume with the num_workers you saved with: torchdata checks it
with a bare assert, which python -O removes, so check it yourself.
"""

import torch
from torch.utils.data import Dataset, get_worker_info
from torchdata.stateful_dataloader import StatefulDataLoader


class NoisySamples(Dataset):
    """samples[i] plus noise from a generator the dataset holds, and saves with the loader's state."""

    def __init__(self, samples, noise=0.1, seed=0):
        self.samples, self.noise = samples, noise
        self.generator = torch.Generator().manual_seed(seed)  # each worker gets its own: seed_worker

    def __getstate__(self):  # a Generator cannot travel to a spawned worker: seed_worker makes one there
        return {**self.__dict__, "generator": None}

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        sample = self.samples[index]
        return sample + self.noise * torch.randn(sample.shape, generator=self.generator)

    def state_dict(self):  # with load_state_dict: StatefulDataLoader saves it in every worker
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state):  # in each new worker, after seed_worker
        self.generator.set_state(state["generator"])


def seed_worker(worker_id):
    """worker_init_fn: each worker's copy of the dataset gets a generator seeded with the worker's seed."""
    info = get_worker_info()
    info.dataset.generator = torch.Generator().manual_seed(info.seed)


def make_loader(dataset, batch_size=64, num_workers=2, seed=0):
    """The same loader at the start and after a restart: same seed, same num_workers."""
    return StatefulDataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                              worker_init_fn=seed_worker, generator=torch.Generator().manual_seed(seed))


def save_checkpoint(path, loader, model, optimizer):
    """Save the model, the optimizer and the loader's position in the epoch (between two batches)."""
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "loader": loader.state_dict(), "num_workers": loader.num_workers}, path)


def resume(path, loader, model, optimizer):
    """Restore a checkpoint: the next `for batch in loader` continues the saved epoch."""
    checkpoint = torch.load(path, weights_only=True)
    if checkpoint["num_workers"] != loader.num_workers:  # torchdata's check is a bare assert
        raise ValueError(f"resume with num_workers={checkpoint['num_workers']} as saved, not {loader.num_workers}")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    loader.load_state_dict(checkpoint["loader"])
