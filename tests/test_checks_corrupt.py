"""Lab 21 checker: a collate_fn that drops broken (None) samples, keeps the order, and returns None
for an empty batch; wrong answers get one sentence that says what is wrong."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, default_collate

from loaderlab.checks.lab21 import check_skip_broken_collate
from loaderlab.labs.lab21 import SometimesBroken


def _verdict(capsys, candidate, *args) -> str:
    ok = check_skip_broken_collate(candidate, *args)
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1 and "Traceback" not in out, out
    assert ok == out.startswith("✅")
    return out


def solution(batch):
    readable = [sample for sample in batch if sample is not None]
    return default_collate(readable) if readable else None


def by_hand(batch):  # another correct answer: stacks the readable samples itself
    readable = [s for s in batch if s is not None]
    if not readable:
        return None
    return [torch.stack([image for image, _ in readable]), torch.tensor([label for _, label in readable])]


def run_epoch(dataset, collate_fn):
    sizes = []
    for batch in DataLoader(dataset, batch_size=8, collate_fn=collate_fn):
        if batch is not None:
            sizes.append(len(batch[0]))
    return sizes


def run_epoch_without_skip(dataset, collate_fn):
    return [len(batch[0]) for batch in DataLoader(dataset, batch_size=8, collate_fn=collate_fn)]


@pytest.mark.parametrize("candidate", [solution, by_hand])
def test_correct_answers_are_accepted_with_the_loop_figures(capsys, candidate):
    out = _verdict(capsys, candidate, run_epoch)
    assert "batches of [7, 7, 7, 8]: 29 of 40 samples, 1 empty batch skipped" in out


def test_the_dataset_breaks_one_whole_batch():
    dataset = SometimesBroken()
    assert all(dataset[i] is None for i in range(16, 24)) and dataset[0][1] == 0


def keeps_nones(batch):
    return default_collate(batch)


def crashes_on_empty(batch):
    return default_collate([s for s in batch if s is not None])


def empty_list(batch):
    readable = [s for s in batch if s is not None]
    return default_collate(readable) if readable else []


def no_collate(batch):
    return [s for s in batch if s is not None] or None


def fills_in(batch):
    readable = [s for s in batch if s is not None]
    if not readable:
        return None
    blank = (torch.zeros_like(readable[0][0]), -1)
    return default_collate([blank if s is None else s for s in batch])


def drops_first(batch):
    readable = [s for s in batch if s is not None][1:]
    return default_collate(readable) if readable else None


def reversed_order(batch):
    readable = [s for s in batch if s is not None][::-1]
    return default_collate(readable) if readable else None


def always_none(batch):
    return None


@pytest.mark.parametrize(
    ("candidate", "words"),
    [
        (keeps_nones, "still reach default_collate"),
        (crashes_on_empty, "IndexError"),
        (empty_list, "return None, which the loop skips"),
        (no_collate, "not a batch: pass the readable samples to default_collate"),
        (fills_in, "drop the broken ones, do not fill them in"),
        (drops_first, "keep every sample that is not None"),
        (reversed_order, "in the order they came"),
        (always_none, "only a batch with nothing left may be None"),
    ],
)
def test_wrong_answers_get_one_sentence_that_says_why(capsys, candidate, words):
    out = _verdict(capsys, candidate)
    assert out.startswith("❌") and words in out and "notebook 21" in out


def test_a_loop_that_does_not_skip_the_empty_batch_is_named(capsys):
    out = _verdict(capsys, solution, run_epoch_without_skip)
    assert out.startswith("❌") and "skip a batch that is None" in out


def test_the_stub_reports_not_attempted(capsys):
    def stub(batch):
        raise NotImplementedError("your code here")

    assert check_skip_broken_collate(stub, run_epoch) is False
    assert capsys.readouterr().out.strip() == "⏳ not attempted yet"
