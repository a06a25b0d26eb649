"""Lab 06 checker: wrong COW "fixes" are rejected for their specific reason, right ones accepted."""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from loaderlab.checks import lab06 as memory
from loaderlab.checks.lab06 import check_cow_fix, worker_growth
from loaderlab.labs.lab06 import caption_rows, list_bytes

pytestmark = pytest.mark.usefixtures("no_leaked_workers")


def verdict(capsys, candidate, **kwargs) -> tuple[bool, str]:
    ok = check_cow_fix(candidate, **kwargs)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "Traceback" not in out, out
    return ok, out.strip()


# ------------------------------------------------------------------ student answers


class CaptionDataset(Dataset):
    """The lab's broken layout (solutions/06_cow_fix.ipynb): keeps the list of str."""

    def __init__(self, rows):
        if not isinstance(rows, list) or not rows:
            raise TypeError("rows must be a non-empty list of str")
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]


class Packed(Dataset):
    """The reference layout: one uint8 buffer plus int64 offsets."""

    def __init__(self, rows):
        encoded = [r.encode() for r in rows]
        self.offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=self.offsets[1:])
        self.buffer = np.frombuffer(b"".join(encoded), dtype=np.uint8)

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, i):
        return self.buffer[self.offsets[i] : self.offsets[i + 1]].tobytes().decode()


class UnicodeArray(Dataset):
    """A different right answer: a fixed-width NumPy unicode array (one buffer)."""

    def __init__(self, rows):
        self.table = np.array(rows)

    def __len__(self):
        return len(self.table)

    def __getitem__(self, i):
        return str(self.table[i])


class TensorBuffer(Packed):
    """Another right answer: torch tensors for the buffer and the offsets."""

    def __init__(self, rows):
        super().__init__(rows)
        self.buffer, self.offsets = torch.from_numpy(self.buffer.copy()), torch.from_numpy(self.offsets)

    def __getitem__(self, i):
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.buffer[start:end].numpy().tobytes().decode()


class KeepsList(CaptionDataset):
    """Wrong: the list is kept (with a new name, as students often do)."""


class ListOfBytes(Dataset):
    def __init__(self, rows):
        self.rows = [r.encode() for r in rows]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i].decode()


class ObjectArray(UnicodeArray):
    def __init__(self, rows):
        self.table = np.array(rows, dtype=object)


class Stripped(UnicodeArray):
    def __getitem__(self, i):
        return str(self.table[i]).strip()


class FixedWidth(Dataset):
    """Wrong: a bytes array of 64 characters truncates the longer rows."""

    def __init__(self, rows):
        self.table = np.array([r.encode() for r in rows], dtype="S64")

    def __len__(self):
        return len(self.table)

    def __getitem__(self, i):
        return self.table[i].decode(errors="ignore")


class ReturnsBytes(FixedWidth):
    def __init__(self, rows):
        self.table = np.array([r.encode() for r in rows])

    def __getitem__(self, i):
        return self.table[i]


class AsciiOnly(FixedWidth):
    def __init__(self, rows):
        self.table = np.array([r.encode("ascii") for r in rows])


class NotADataset:
    def __init__(self, rows):
        self.rows = rows


def stub(rows):
    raise NotImplementedError("your code here")


# ------------------------------------------------------------------------- checker


@pytest.mark.course
@pytest.mark.parametrize("candidate", [Packed, UnicodeArray, TensorBuffer])
def test_layouts_that_keep_the_table_shared_are_accepted(capsys, candidate):
    ok, out = verdict(capsys, candidate)
    assert ok and out.startswith("✅") and "300,000 rows returned exactly" in out, out


@pytest.mark.course
@pytest.mark.parametrize(
    ("candidate", "phrase"),
    [
        (KeepsList, "`rows` is still a list of str"),
        (ListOfBytes, "`rows` is still a list of bytes"),
        (ObjectArray, "`table` is a NumPy array of dtype=object"),
    ],
)
def test_per_row_objects_are_rejected_by_the_memory_they_copy(capsys, candidate, phrase):
    ok, out = verdict(capsys, candidate)
    assert not ok and out.startswith("❌") and "private memory grew by" in out and phrase in out, out


@pytest.mark.parametrize(
    ("candidate", "phrase"),
    [
        (Stripped, "strips the row"),
        (FixedWidth, "truncates the row to"),
        (ReturnsBytes, "returns bytes instead of str"),
        (NotADataset, "not a torch Dataset"),
    ],
)
def test_different_items_are_rejected_before_any_worker_starts(capsys, candidate, phrase):
    ok, out = verdict(capsys, candidate)
    assert not ok and out.startswith("❌") and phrase in out, out


def test_stub_is_pending_and_a_crash_is_one_line(capsys):
    assert verdict(capsys, stub) == (False, "⏳ not attempted yet")
    ok, out = verdict(capsys, AsciiOnly)
    assert not ok and out.startswith("❌ your code raised UnicodeEncodeError: 'ascii' codec"), out


def test_without_fork_the_items_are_checked_and_the_verdict_is_not_checkable(capsys, monkeypatch):
    monkeypatch.setattr(memory, "can_fork", lambda: False)  # Windows
    ok, out = verdict(capsys, KeepsList, n_rows=20_000)  # wrong for memory, but not measurable
    assert not ok and out.startswith("⏳ not checkable here: no fork"), out
    ok, out = verdict(capsys, Stripped, n_rows=20_000)
    assert not ok and "strips the row" in out, out


@pytest.fixture
def spawn_by_default():
    """This process's default start method is spawn (as on macOS) for the test's duration."""
    before = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("spawn", force=True)
    yield
    multiprocessing.set_start_method(before, force=True)


@pytest.mark.course
@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork here")
def test_memory_is_measured_with_fork_also_where_the_default_is_spawn(capsys, spawn_by_default):
    ok, out = verdict(capsys, KeepsList)
    assert not ok and "a forked worker's private memory grew by" in out, out


# ------------------------------------------------------------------------- helpers


@pytest.mark.course
def test_the_broken_dataset_copies_more_than_half_the_list_into_each_worker():
    rows = caption_rows()
    size_mb = list_bytes(rows) / 2**20
    broken = worker_growth(CaptionDataset(rows))
    fixed = worker_growth(Packed(rows))
    assert broken.items == rows and fixed.items == rows  # every index, in index order
    assert min(broken.growth_mb) > 0.5 * size_mb  # measured ~125 %
    assert max(fixed.growth_mb) < 0.1 * size_mb  # measured ~2 %


def test_caption_rows_are_deterministic_and_hard_to_store_wrongly():
    rows = caption_rows(2_000, seed=3)
    assert rows == caption_rows(2_000, seed=3) and len(set(rows)) == 2_000
    assert any(r.endswith(" ") for r in rows) and any(not r.isascii() for r in rows)
    assert max(map(len, rows)) > 64 > min(map(len, rows))
    with pytest.raises(ValueError, match="n_rows"):
        caption_rows(0)
    with pytest.raises(TypeError, match="rows"):
        CaptionDataset(())
    with pytest.raises(TypeError, match="rows"):
        list_bytes([])


def test_worker_growth_counts_only_the_workers_it_started():
    other = DataLoader(range(8), batch_size=4, num_workers=1, persistent_workers=True)
    assert [batch.tolist() for batch in other] == [[0, 1, 2, 3], [4, 5, 6, 7]]  # its worker stays alive
    try:
        rows = caption_rows(20_000)
        measured = worker_growth(Packed(rows), num_workers=2)
        assert len(measured.growth_mb) == 2 and measured.items == rows
    finally:
        other._iterator._shutdown_workers()
