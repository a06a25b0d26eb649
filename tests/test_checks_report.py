"""The one-line report every checker shares: a failed answer's workers are gone when it returns."""

from __future__ import annotations

import gc
from collections.abc import Callable

import pytest
from torch.utils.data import DataLoader, Dataset

from loaderlab.checks.report import Wrong, checker
from loaderlab.env import can_fork
from loaderlab.measure.memory import live_workers

pytestmark = pytest.mark.skipif(not can_fork(), reason="the answers below start fork workers")


class Breaks(Dataset):
    """Eight items; item 5 raises (the student's bug, re-raised in the main process)."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> int:
        if index == 5:
            raise KeyError(index)
        return index


def make_loader() -> DataLoader:  # the student's answer: a function that builds a loader
    return DataLoader(Breaks(), batch_size=2, num_workers=2, multiprocessing_context="fork")


@checker
def judged_wrong(make: Callable[[], DataLoader]) -> str:
    batches = iter(make())  # held by this frame, which the traceback holds
    next(batches)
    raise Wrong("the first batch is wrong")


@checker
def raises_inside(make: Callable[[], DataLoader]) -> str:
    batches = iter(make())
    for _ in batches:
        pass
    return "never"


@pytest.mark.parametrize(
    "check, line", [(judged_wrong, "❌ the first batch is wrong"), (raises_inside, "KeyError")]
)
def test_a_failed_answer_leaves_no_worker_behind(check, line, capsys):
    # Freed by reference counting, not by a full collection (~0.1 s in a big process: 138 of them
    # took 20 s of the check tier): the collector may not run while the check does.
    gc.disable()
    try:
        assert check(make_loader) is False
        assert line in capsys.readouterr().out
        assert live_workers() == []  # at once: not after a timeout, not at the next collection
    finally:
        gc.enable()
