"""Lab 01 checker: wrong loaders a student would write are rejected with their own reason."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset

from loaderlab import env
from loaderlab.checks import lab01 as loops
from loaderlab.checks.lab01 import (
    FixedOrderSampler,
    check_loop_to_loader,
    loop_data,
    manual_batches,
    shuffled_sampler,
)
from loaderlab.env import worker_start_method


class PairDataset(Dataset):
    """The expected answer: one (features[i], labels[i]) pair per index."""

    def __init__(self, features, labels, transform=None, swap=False):
        self.features, self.labels, self.transform, self.swap = features, labels, transform, swap

    def __len__(self):
        return len(self.features)

    def __getitem__(self, i):
        x, y = self.features[i], self.labels[i]
        if self.transform is not None:
            x, y = self.transform(x, y)
        return (y, x) if self.swap else (x, y)


def correct(features, labels, sampler, batch_size):
    return DataLoader(PairDataset(features, labels), batch_size=batch_size, sampler=sampler)


def correct_tensor_dataset(features, labels, sampler, batch_size):
    # a different correct answer: TensorDataset, the order passed as batch_sampler-free list
    return DataLoader(TensorDataset(features, labels), batch_size=batch_size, sampler=list(sampler))


def correct_int_labels(features, labels, sampler, batch_size):
    dataset = PairDataset(features, labels, transform=lambda x, y: (x, int(y)))
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=0)


def shuffle_instead_of_sampler(features, labels, sampler, batch_size):
    return DataLoader(PairDataset(features, labels), batch_size=batch_size, shuffle=True)


def sequential_ignoring_sampler(features, labels, sampler, batch_size):
    return DataLoader(PairDataset(features, labels), batch_size=batch_size)


def drop_last(features, labels, sampler, batch_size):
    return DataLoader(PairDataset(features, labels), batch_size=batch_size, sampler=sampler, drop_last=True)


def swapped(features, labels, sampler, batch_size):
    return DataLoader(PairDataset(features, labels, swap=True), batch_size=batch_size, sampler=sampler)


def double_features(features, labels, sampler, batch_size):
    dataset = PairDataset(features, labels, transform=lambda x, y: (x.double(), y))
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)


def float_labels(features, labels, sampler, batch_size):
    dataset = PairDataset(features, labels, transform=lambda x, y: (x, float(y)))
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)


def batch_size_ignored(features, labels, sampler, batch_size):
    return DataLoader(PairDataset(features, labels), sampler=sampler)


def batch_size_hard_coded(features, labels, sampler, batch_size):
    return DataLoader(PairDataset(features, labels), batch_size=10, sampler=sampler)


class OffByOne(PairDataset):
    def __getitem__(self, i):
        return super().__getitem__((i + 1) % len(self))


def off_by_one(features, labels, sampler, batch_size):
    return DataLoader(OffByOne(features, labels), batch_size=batch_size, sampler=sampler)


class WrongLabel(PairDataset):
    def __getitem__(self, i):
        return self.features[i], self.labels[(i + 1) % len(self)]


def wrong_label(features, labels, sampler, batch_size):
    return DataLoader(WrongLabel(features, labels), batch_size=batch_size, sampler=sampler)


class FailsInWorkers(PairDataset):
    def __getitem__(self, i):
        from torch.utils.data import get_worker_info

        if get_worker_info() is not None:
            raise KeyError(f"sample {i} missing in worker")
        return super().__getitem__(i)


def fails_in_workers(features, labels, sampler, batch_size):
    return DataLoader(FailsInWorkers(features, labels), batch_size=batch_size, sampler=sampler)


def returns_list(features, labels, sampler, batch_size):
    return manual_batches(features, labels, list(sampler), batch_size)


def stub(features, labels, sampler, batch_size):
    raise NotImplementedError("your code here")


def raises(features, labels, sampler, batch_size):
    raise ValueError("boom: features has no attribute shape\nsecond line")


def _line(capsys) -> str:
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    return lines[0]


@pytest.mark.parametrize("candidate", [correct, correct_tensor_dataset, correct_int_labels])
def test_correct_loaders_pass(candidate, capsys, no_leaked_workers):
    assert check_loop_to_loader(candidate) is True
    line = _line(capsys)
    assert line.startswith("✅") and "2 workers" in line


@pytest.mark.parametrize(
    ("candidate", "phrase"),
    [
        (shuffle_instead_of_sampler, "right samples but in another order"),
        (sequential_ignoring_sampler, "right samples but in another order"),
        (drop_last, "last, incomplete batch (2 samples) is missing"),
        (swapped, "(labels, features), swapped"),
        (double_features, "features come out as torch.float64"),
        (float_labels, "labels come out as torch.float64"),
        (batch_size_ignored, "asked for batch_size=10 but your batches hold 1 samples"),
        (batch_size_hard_coded, "asked for batch_size=8 but your batches hold 10 samples"),
        (off_by_one, "other samples than the sampler's indices"),
        (wrong_label, "batch 0 differs from the loop's batch"),
        (returns_list, "returned a list, not a torch.utils.data.DataLoader"),
        (fails_in_workers, "your code raised KeyError: 'sample"),
    ],
)
def test_wrong_loaders_fail_with_their_reason(candidate, phrase, capsys, no_leaked_workers):
    assert check_loop_to_loader(candidate) is False
    line = _line(capsys)
    assert line.startswith("❌") and phrase in line, line


def test_stub_is_not_attempted(capsys):
    assert check_loop_to_loader(stub) is False
    assert _line(capsys) == "⏳ not attempted yet"


def test_raising_candidate_gets_one_line_without_traceback(capsys):
    assert check_loop_to_loader(raises) is False
    line = _line(capsys)
    assert line == "❌ your code raised ValueError: boom: features has no attribute shape"


def test_helpers_build_the_loop_batches_and_validate():
    features, labels = loop_data(n=5, dim=3)
    assert features[:, 0].tolist() == [0, 1, 2, 3, 4] and labels.dtype == torch.long
    sampler = shuffled_sampler(5, seed=0)
    assert sorted(sampler) == [0, 1, 2, 3, 4] and list(sampler) == list(sampler)
    batches = manual_batches(features, labels, sampler.order, 2)
    assert [len(x) for x, _ in batches] == [2, 2, 1]
    assert batches[0][0][:, 0].long().tolist() == sampler.order[:2]
    with pytest.raises(ValueError, match="batch_size"):
        manual_batches(features, labels, [0], 0)
    with pytest.raises(ValueError, match="order"):
        FixedOrderSampler([])


def test_workers_start_like_the_session_and_a_notebook_class_is_forked(monkeypatch):
    in_main = type("InMain", (PairDataset,), {"__module__": "__main__"})(*loop_data(n=4))
    in_module = PairDataset(*loop_data(n=4))
    monkeypatch.setattr(env, "start_method", lambda: "spawn")
    assert worker_start_method(in_module) == "spawn"
    assert worker_start_method(in_main) == "fork"
    monkeypatch.setattr(env, "can_fork", lambda: False)
    assert worker_start_method(in_main) is None and worker_start_method(in_module) == "spawn"
    monkeypatch.setattr(env, "start_method", lambda: "fork")
    assert worker_start_method(in_main) == "fork"


@pytest.mark.spawn
@pytest.mark.course
def test_workers_checked_under_spawn_when_the_dataset_is_importable(monkeypatch, capsys, no_leaked_workers):
    monkeypatch.setattr(env, "start_method", lambda: "spawn")
    started = []
    rebuild = loops.rebuild
    monkeypatch.setattr(
        loops,
        "rebuild",
        lambda loader, **kw: started.append(kw["multiprocessing_context"]) or rebuild(loader, **kw),
    )
    assert check_loop_to_loader(correct_tensor_dataset) is True
    assert _line(capsys).endswith("and with 2 workers") and started == ["spawn"]


def test_notebook_class_without_fork_is_checked_without_workers(monkeypatch, capsys):
    monkeypatch.setattr(env, "start_method", lambda: "spawn")
    monkeypatch.setattr(env, "can_fork", lambda: False)
    in_main = type("InMain", (PairDataset,), {"__module__": "__main__"})

    def notebook_class(features, labels, sampler, batch_size):
        return DataLoader(in_main(features, labels), batch_size=batch_size, sampler=sampler)

    assert check_loop_to_loader(notebook_class) is True
    line = _line(capsys)
    assert line.startswith("✅") and "workers not checked" in line
