"""Notebook 05's snippets: the loop in bucketing.py runs with workers, and the snippets are the
code the lesson built (pad_collate in lesson05_pad_collate.py, the sampler in a notebook cell)."""

from __future__ import annotations

import importlib.util
import inspect

import nbformat
import pytest
from course_code import ROOT, lesson, snippet
from torch.utils.data import DataLoader

from loaderlab.data import make_token_sequences

NOTEBOOK = ROOT / "notebooks" / "05_collate_and_padding.ipynb"


@pytest.mark.course
def test_bucketed_epochs_deliver_every_token_each_epoch_with_new_batches(no_leaked_workers):
    samples = make_token_sequences(n=4096, seed=2)
    lengths = [len(tokens) for tokens, _ in samples]
    epochs: dict[int, list] = {0: [], 1: []}
    for epoch, (ids, padding_mask, labels) in snippet("bucketing").bucketed_epochs(
        samples, lengths, snippet("pad_collate").pad_collate, num_epochs=2, num_workers=2
    ):
        assert ids.shape == padding_mask.shape and len(labels) == len(ids) <= 32
        epochs[epoch].append((ids.shape, int((~padding_mask).sum())))
    for batches in epochs.values():
        assert sum(real for _, real in batches) == sum(lengths)
        padded = sum(shape[0] * shape[1] for shape, _ in batches)
        assert 1 - sum(lengths) / padded < 0.10  # bucketed: under 10 % pad tokens
    assert epochs[0] != epochs[1]


def test_the_snippets_are_the_code_the_lesson_built():
    assert inspect.getsource(lesson("lesson05_pad_collate").pad_collate) == inspect.getsource(
        snippet("pad_collate").pad_collate
    )
    text = (ROOT / "docs" / "snippets" / "bucketing.py").read_text()
    sampler = text[text.index("class BucketBatchSampler") : text.index("\n\n\ndef bucketed_epochs")].strip()
    cells = [c.source.strip() for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]
    assert sampler in cells, "notebook 05's BucketBatchSampler cell differs from docs/snippets/bucketing.py"


def test_token_dataset_holds_one_tensor_and_returns_the_samples():
    samples = make_token_sequences(n=300, seed=3)
    dataset = lesson("lesson05_tokens").TokenDataset(samples)
    tensors = [v for v in vars(dataset).values() if hasattr(v, "storage")]
    assert len(tensors) == 1  # a forkserver worker receives one file descriptor, not 300
    assert dataset.lengths() == [len(tokens) for tokens, _ in samples]
    for i in (0, 137, 299):
        tokens, label = dataset[i]
        assert tokens.tolist() == samples[i][0].tolist() and label == samples[i][1]


@pytest.mark.course
def test_token_dataset_starts_forkserver_workers(monkeypatch, no_leaked_workers):
    # one flat tensor: a Dataset of 300 separate tensors fails here with "too many fds"
    monkeypatch.syspath_prepend(str(ROOT / "notebooks"))  # the workers import lesson05_tokens by name
    dataset = importlib.import_module("lesson05_tokens").TokenDataset(make_token_sequences(n=300, seed=3))
    loader = DataLoader(dataset, batch_size=None, num_workers=1, multiprocessing_context="forkserver")
    assert sum(len(tokens) for tokens, _ in loader) == sum(dataset.lengths())
