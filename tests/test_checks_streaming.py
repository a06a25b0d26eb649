"""Lab 11 checker: an IterableDataset sharded by rank and worker, every item exactly once."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from loaderlab import env
from loaderlab.checks import lab11 as streaming
from loaderlab.checks.lab11 import check_sharded_iterable


def _verdict(capsys, candidate) -> str:
    ok = check_sharded_iterable(candidate)
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1 and "Traceback" not in out, out
    assert ok == out.startswith("✅")
    return out


def _reader() -> tuple[int, int]:
    info = get_worker_info()
    return (0, 1) if info is None else (info.id, info.num_workers)


class Strided(IterableDataset):
    """Correct: reader rank * k + worker takes every readers-th item."""

    def __init__(self, n, rank=0, world_size=1):
        self.n, self.rank, self.world_size = n, rank, world_size

    def __iter__(self):
        worker, k = _reader()
        yield from range(self.rank * k + worker, self.n, self.world_size * k)


class Blocks(Strided):
    """Correct, differently: balanced contiguous blocks, yielded as 0-d tensors."""

    def __iter__(self):
        worker, k = _reader()
        reader, readers = self.rank * k + worker, self.world_size * k
        for i in range(reader * self.n // readers, (reader + 1) * self.n // readers):
            yield torch.tensor(i)


class Unsharded(Strided):
    def __iter__(self):
        yield from range(self.n)


class WorkerOnly(Strided):
    def __iter__(self):
        worker, k = _reader()
        yield from range(worker, self.n, k)


class RankOnly(Strided):
    def __iter__(self):
        yield from range(self.rank, self.n, self.world_size)


class RankPlusWorker(Strided):  # reader id rank + worker: readers of different ranks collide
    def __iter__(self):
        worker, k = _reader()
        yield from range(self.rank + worker, self.n, self.world_size * k)


class FloorChunks(Strided):
    def __iter__(self):
        worker, k = _reader()
        readers, reader = self.world_size * k, self.rank * k + worker
        size = self.n // readers
        yield from range(reader * size, (reader + 1) * size)


class NoneUnhandled(Strided):
    def __iter__(self):
        info = get_worker_info()
        k = info.num_workers
        yield from range(self.rank * k + info.id, self.n, self.world_size * k)


class Floats(Strided):
    def __iter__(self):
        for i in super().__iter__():
            yield float(i)


class WholeShard(Strided):
    def __iter__(self):
        yield torch.tensor(list(super().__iter__()))


class IteratorInInit(Strided):
    def __init__(self, n, rank=0, world_size=1):
        super().__init__(n, rank, world_size)
        self.items = None

    def __iter__(self):
        if self.items is None:
            self.items = super().__iter__()
        return self.items


class Endless(Strided):
    def __iter__(self):
        while True:
            yield 0


def a_list(n, rank=0, world_size=1):
    return list(range(rank, n, world_size))


@pytest.mark.course
def test_correct_datasets_are_accepted(capsys, no_leaked_workers):
    for candidate in (Strided, Blocks):
        out = _verdict(capsys, candidate)
        assert out.startswith("✅") and "8 setups, real workers started by" in out, out


@pytest.mark.course
@pytest.mark.parametrize(
    ("candidate", "phrase"),
    [
        (Unsharded, "your stream is not sharded"),
        (WorkerOnly, "ranks 0 and 1 both yield item 0"),
        (RankOnly, "with num_workers=2 item 0 arrives 2 times from one rank"),
        (RankPlusWorker, "ranks 0 and 1 both yield item 1"),
        (FloorChunks, "blocks of n // 2 lose the last 1 item(s)"),
        (NoneUnhandled, "get_worker_info() returns None in the main process"),
        (Floats, "yielded 0.0 (float)"),
        (WholeShard, "yielded a tensor of shape (29,)"),
        (IteratorInInit, "a second epoch over the same dataset delivered 0 of 29"),
        (Endless, "delivered more than 116 items"),
        (a_list, "make_dataset returned list"),
    ],
)
def test_wrong_datasets_are_rejected_with_their_reason(capsys, no_leaked_workers, candidate, phrase):
    out = _verdict(capsys, candidate)
    assert out.startswith("❌") and phrase in out, out
    assert "Hint: notebook 11" in out


def in_notebook(cls):
    """The class as if defined in a notebook cell (module __main__): spawned workers cannot import it."""
    return type(cls.__name__, (cls,), {"__module__": "__main__"})


def _spy_on_loaders(monkeypatch) -> list:
    started = []

    def loader(dataset, **kwargs):
        started.append(kwargs.get("multiprocessing_context"))
        return DataLoader(dataset, **kwargs)

    monkeypatch.setattr(streaming, "DataLoader", loader)
    return started


@pytest.mark.spawn
@pytest.mark.course
def test_workers_start_like_the_session_so_lab11_py_is_read_by_spawned_workers(
    monkeypatch, no_leaked_workers
):
    monkeypatch.setattr(env, "start_method", lambda: "spawn")
    started = _spy_on_loaders(monkeypatch)
    items = streaming._read(Strided(29), 2, 116, "rank 0 of 1 with num_workers=2")
    assert sorted(items) == list(range(29)) and started == ["spawn"]
    streaming._read(in_notebook(Strided)(29), 2, 116, "rank 0 of 1 with num_workers=2")
    assert started == ["spawn", "fork"]  # a class in __main__ is forked where fork exists


@pytest.mark.course
def test_a_notebook_class_without_fork_is_read_by_simulated_workers(capsys, monkeypatch, no_leaked_workers):
    monkeypatch.setattr(env, "start_method", lambda: "spawn")  # Windows: spawn, and no fork
    monkeypatch.setattr(env, "can_fork", lambda: False)
    assert "simulated in-process" in _verdict(capsys, in_notebook(Strided))
    assert "ranks 0 and 1 both yield item 0" in _verdict(capsys, in_notebook(WorkerOnly))
    assert "arrives 2 times from one rank" in _verdict(capsys, in_notebook(RankOnly))
    assert get_worker_info() is None  # the simulation leaves no worker info behind


@pytest.mark.course
def test_stub_is_not_attempted_and_a_crash_is_one_line(capsys, no_leaked_workers):
    class Stub(Strided):
        def __iter__(self):
            raise NotImplementedError("your code here")

    class CrashesInWorker(Strided):
        def __iter__(self):
            if get_worker_info() is not None:
                raise KeyError("shard-file")
            yield from super().__iter__()

    assert _verdict(capsys, Stub).startswith("⏳ not attempted yet")
    out = _verdict(capsys, CrashesInWorker)
    assert out.startswith("❌ your code raised KeyError") and "shard-file" in out
