"""The spawn guard (tools/simulation/spawnguard.py) that make test's fork run of notebooks/ uses
instead of a second run under forkserver: it names what spawn could not send to a worker."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest
import torch
from course_code import ROOT
from torch.utils.data import TensorDataset

from tools.simulation import spawnguard


class InModule:
    def __init__(self, n: int) -> None:
        self.n = n


class InNotebook(InModule):
    pass


InNotebook.__module__ = "__main__"  # as if a notebook cell defined it


def _loader(dataset, collate_fn=None, worker_init_fn=None):
    return SimpleNamespace(dataset=dataset, collate_fn=collate_fn, worker_init_fn=worker_init_fn)


def test_importable_pieces_and_tensors_pass():
    assert spawnguard.problems(_loader(InModule(3), collate_fn=torch.stack)) == []
    assert spawnguard.problems(_loader(TensorDataset(torch.zeros(1000, 1000)))) == []


def test_a_notebook_class_a_notebook_function_and_an_unpicklable_object_are_named():
    def collate(batch):
        return batch

    collate.__module__ = "__main__"
    found = spawnguard.problems(_loader([InNotebook(1)], collate_fn=collate))
    assert found[0] == "dataset: InNotebook is defined in __main__ (a notebook cell)" and len(found) == 2
    assert found[1].startswith("collate_fn: ")
    assert found[1].endswith(".collate is defined in __main__ (a notebook cell)")
    locked = spawnguard.problems(_loader(InModule(threading.Lock())))
    assert len(locked) == 1 and locked[0].startswith("dataset: cannot be pickled: TypeError")


@pytest.mark.course  # a fresh Python importing torch and starting two workers
@pytest.mark.skipif(
    multiprocessing.get_all_start_methods()[0] != "fork", reason="the guard acts where fork is the default"
)
def test_a_kernel_with_the_guard_writes_what_a_default_loader_could_not_send(tmp_path):
    script = (
        "import torch\nfrom torch.utils.data import DataLoader, Dataset\n"
        "class Cell(Dataset):\n    def __len__(self): return 4\n"
        "    def __getitem__(self, i): return i\n"
        "list(DataLoader(Cell(), batch_size=2, num_workers=2))\n"
        "list(DataLoader(Cell(), batch_size=2, num_workers=2, multiprocessing_context='fork'))\n"
    )
    env = dict(os.environ, LOADERLAB_SPAWN_GUARD=str(tmp_path), PYTHONPATH=str(ROOT / "tools" / "simulation"))
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120)
    reports = list(tmp_path.glob("*.txt"))
    assert len(reports) == 1  # the default loader only: the one that names fork is left alone
    assert reports[0].read_text() == "dataset: Cell is defined in __main__ (a notebook cell)\n"
