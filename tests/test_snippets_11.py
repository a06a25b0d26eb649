"""Notebook 11's snippets: the stream of sharded_iterable.py reads every item once over ranks and
workers, the epoch loop of shuffle_buffer.py shuffles within workers and differs per epoch, and
both classes are the code the lesson built (lesson11_rank_shards.py, lesson11_shuffle_buffer.py)."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest
from course_code import ROOT, snippet
from torch.utils.data import DataLoader


@pytest.mark.parametrize("num_workers", [0, 2, 3])
def test_sharded_stream_reads_every_item_once_over_ranks_and_workers(num_workers, no_leaked_workers):
    stream_class = snippet("sharded_iterable").RankWorkerShardedStream
    items, shares = [], []
    for rank in range(2):
        stream = stream_class(29, rank=rank, world_size=2)
        with warnings.catch_warnings():  # 3 workers exceed the suggested maximum on 2 cores
            warnings.simplefilter("ignore", UserWarning)
            loader = DataLoader(stream, batch_size=4, num_workers=num_workers)
            seen = [i for batch in loader for i in batch.tolist()]
        assert len(seen) == len(stream)  # len() is the rank's share, whatever num_workers is
        items += seen
        shares.append(len(seen))
    assert sorted(items) == list(range(29)) and shares == [14, 15]


def test_shuffle_buffer_epochs_deliver_every_item_once_in_a_new_order(no_leaked_workers):
    stream = snippet("sharded_iterable").RankWorkerShardedStream(400)  # no process group: workers only
    batches = []
    snippet("shuffle_buffer").train_epochs(
        stream, batches.append, num_epochs=2, buffer_size=32, batch_size=50, num_workers=2
    )
    items = [i for batch in batches for i in batch.tolist()]
    epochs = [items[:400], items[400:]]
    assert [sorted(e) for e in epochs] == [list(range(400))] * 2
    assert epochs[0] != epochs[1] and epochs[0] != sorted(epochs[0])


def test_shuffle_buffer_moves_items_at_most_buffer_size_minus_one_earlier():
    order = list(snippet("shuffle_buffer").ShuffleBuffer(range(1000), buffer_size=16))
    assert sorted(order) == list(range(1000)) and order != list(range(1000))
    assert all(position >= item - 15 for position, item in enumerate(order))
    assert list(snippet("shuffle_buffer").ShuffleBuffer(range(50), buffer_size=1)) == list(range(50))


def class_source(path: Path, name: str) -> str:
    """The text of class ``name`` in the file ``path``."""
    text = path.read_text()
    node = next(n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == name)
    return "\n".join(text.splitlines()[node.lineno - 1 : node.end_lineno])


def test_the_snippets_are_the_code_the_lesson_built():
    snippets, notebooks = ROOT / "docs" / "snippets", ROOT / "notebooks"
    assert class_source(snippets / "sharded_iterable.py", "RankWorkerShardedStream") == class_source(
        notebooks / "lesson11_rank_shards.py", "RankWorkerShardedStream"
    )
    assert class_source(snippets / "shuffle_buffer.py", "ShuffleBuffer") == class_source(
        notebooks / "lesson11_shuffle_buffer.py", "ShuffleBuffer"
    )


def _class_source(path: Path, name: str) -> str:
    text = path.read_text()
    node = next(n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == name)
    return ast.get_source_segment(text, node)


@pytest.mark.parametrize(
    ("snippet_name", "module", "name"),
    [
        ("shuffle_buffer", "lesson11_shuffle_buffer", "ShuffleBuffer"),
        ("sharded_iterable", "lesson11_rank_shards", "RankWorkerShardedStream"),
    ],
)
def test_the_snippet_is_the_class_notebook_11_builds(snippet_name, module, name):
    """The cheat sheet copies notebook 11's class on purpose: the two texts must not drift."""
    root = Path(__file__).resolve().parent.parent
    assert _class_source(root / "docs" / "snippets" / f"{snippet_name}.py", name) == _class_source(
        root / "notebooks" / f"{module}.py", name
    )
