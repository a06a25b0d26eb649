"""Written by notebook 06, section 7: a Dataset that measures its own unpickling in the worker."""

import psutil
import torch
from torch.utils.data import Dataset


def uss_mb() -> float:
    """This process's USS in MB: the memory no other process shares with it."""
    return psutil.Process().memory_full_info().uss / 2**20


class USSNow:
    """Pickles to "read your USS": unpickled in a worker, it becomes that worker's USS in MB."""

    def __reduce__(self):
        return uss_mb, ()


class UnpickleCost(Dataset):
    """Sent pickled to a spawn or forkserver worker, it reads the worker's USS between its parts as
    they are unpickled; its one sample: the MB each part added (zeros in the process that built it)."""

    def __init__(self, parts: dict):
        self.parts, self.cost_mb = parts, [0.0] * len(parts)

    def __len__(self) -> int:
        return 1

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor(self.cost_mb)

    def __getstate__(self) -> dict:
        stream = [USSNow()]  # unpickled in order: a reading, a part, a reading, a part, ...
        for part in self.parts.values():
            stream += [part, USSNow()]
        return {"names": list(self.parts), "stream": stream}

    def __setstate__(self, state: dict) -> None:
        readings, parts = state["stream"][0::2], state["stream"][1::2]
        self.parts = dict(zip(state["names"], parts, strict=True))
        self.cost_mb = [after - before for before, after in zip(readings[:-1], readings[1:], strict=True)]
