"""Notebook 06's lesson modules (notebooks/lesson06_rows*.py, written by its %%writefile cells): the
table Datasets read what they claim (and NormalizingRowLengths writes in place), CollectAtStart
reports what its collection added after the gate lets it go, and UnpickleCost measures each
part's copy where it is unpickled."""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest
from course_code import ROOT, lesson

from loaderlab.cow import list_size_mb
from loaderlab.data import make_metadata, metadata_array


def test_row_lengths_batched_fetch_matches_single_fetch_for_list_and_array():
    rows = make_metadata(n_rows=50, row_chars=20)
    for table in (rows, metadata_array(rows)):
        dataset = lesson("lesson06_rows").RowLengths(table)
        assert len(dataset) == 50
        assert dataset.__getitems__([3, 0, 49]) == [int(dataset[i]) for i in (3, 0, 49)] == [20, 20, 20]


def test_normalizing_row_lengths_writes_only_the_rows_it_reads():
    table = np.array([b"abc", b"xyz"])
    dataset = lesson("lesson06_writing_rows").NormalizingRowLengths(table)
    assert dataset.__getitems__([1]) == [3] and table.tolist() == [b"abc", b"XYZ"]
    assert int(dataset[0]) == 3 and table[0] == b"ABC"


def test_packed_row_lengths_reads_every_row_back():
    rows = ["alpha", "", "héllo ü€", "日本 "]
    encoded = [r.encode() for r in rows]
    offsets = np.cumsum([0] + [len(b) for b in encoded])
    buffer = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    dataset = lesson("lesson06_packed_rows").PackedRowLengths(buffer, offsets)
    assert len(dataset) == 4 and [dataset.row(i) for i in range(4)] == rows
    assert dataset.__getitems__([2, 3]) == [len(rows[2]), len(rows[3])] and int(dataset[0]) == 5


def test_collect_at_start_waits_for_its_gate_then_stores_a_figure_at_the_worker_id():
    gate, added = threading.Event(), [None, None]
    init = lesson("lesson06_gc_at_start").CollectAtStart(lambda worker_id: gate.wait(10), added)
    thread = threading.Thread(target=init, args=(1,))
    thread.start()
    thread.join(0.2)
    assert added == [None, None]  # held at the gate
    gate.set()
    thread.join(10)
    assert added[0] is None and isinstance(added[1], float)


@pytest.mark.course
def test_unpickle_cost_measures_each_part_where_it_is_unpickled():
    rows = make_metadata(n_rows=100_000, row_chars=100)
    array = np.ones(20 * 2**20, dtype=np.uint8)
    probe = lesson("lesson06_unpickle_cost").UnpickleCost({"list": rows, "array": array, "small": [1, 2]})
    assert len(probe) == 1 and probe[0].tolist() == [0.0, 0.0, 0.0]
    # Unpickled in a fresh Python, as in a spawned worker (this process may reuse freed pages).
    unpickle = (
        "import pickle, sys; sys.path.insert(0, 'notebooks'); "
        "copy = pickle.loads(sys.stdin.buffer.read()); print(*copy[0].tolist())"
    )
    result = subprocess.run(
        [sys.executable, "-c", unpickle],
        input=pickle.dumps(probe),
        cwd=ROOT,
        capture_output=True,
        timeout=120,
        check=True,
    )
    list_mb, array_mb, small_mb = map(float, result.stdout.split())
    assert list_mb >= 0.5 * list_size_mb(rows)
    assert 15 <= array_mb <= 25
    assert small_mb < 1.0
    copy = pickle.loads(pickle.dumps(probe))
    assert copy.parts["small"] == [1, 2] and len(copy.cost_mb) == 3


@pytest.mark.course
def test_lesson_modules_import_without_loaderlab():
    """One fresh interpreter for the five (each costs a torch import); an import of loaderlab
    raises there, and the traceback names the module."""
    names = [
        "lesson06_rows",
        "lesson06_writing_rows",
        "lesson06_gc_at_start",
        "lesson06_packed_rows",
        "lesson06_unpickle_cost",
    ]
    block = "import sys; sys.modules['loaderlab'] = None; sys.path.insert(0, 'notebooks')"
    code = f"{block}\nimport {', '.join(names)}"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)
