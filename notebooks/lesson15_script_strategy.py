"""Written by notebook 15, section 3: a script that sets file_system at its top or under its guard."""

import sys

import torch.multiprocessing as torch_mp
from torch.utils.data import DataLoader, Dataset

if sys.argv[1] == "top":  # module level: runs again in every spawn or forkserver worker
    torch_mp.set_sharing_strategy("file_system")


class WorkerStrategy(Dataset):
    """Each sample: the sharing strategy of the worker that fetched it."""

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int) -> str:
        return torch_mp.get_sharing_strategy()


if __name__ == "__main__":
    if sys.argv[1] == "guard":  # under the guard: the main process only
        torch_mp.set_sharing_strategy("file_system")
    loader = DataLoader(WorkerStrategy(), batch_size=None, num_workers=1, multiprocessing_context=sys.argv[2])
    print("main:", torch_mp.get_sharing_strategy(), "| worker:", *sorted(set(loader)))
