"""Setup, progress policy and the synthetic data makers."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import loaderlab
from loaderlab import data, env


def test_setup_seeds_every_generator(capsys):
    loaderlab.setup(seed=5)
    first = (random.random(), np.random.rand(), torch.rand(1).item())
    loaderlab.setup(seed=5)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == first
    out = capsys.readouterr().out
    assert "torch 2.13.0" in out and "start method" in out


def test_setup_rejects_a_bad_seed_and_a_bad_start_method(monkeypatch):
    with pytest.raises(ValueError, match="seed"):
        loaderlab.setup(seed=-1)
    monkeypatch.setenv(env.START_METHOD_VARIABLE, "teleport")
    with pytest.raises(ValueError, match="LOADERLAB_START_METHOD"):
        env.apply_start_method()


def test_progress_prints_one_stable_line_in_test_mode(monkeypatch, capsys):
    monkeypatch.setenv(env.TEST_MODE_VARIABLE, "1")
    assert list(loaderlab.progress(range(3), desc="epoch")) == [0, 1, 2]
    assert capsys.readouterr().out == "epoch: 3/3 done\n"


def test_warnings_are_printed_without_machine_paths():
    text = env._plain_warning("careful", UserWarning, "/some/abs/path.py", 3)
    assert text == "UserWarning: careful\n"


def test_workspace_is_removed_on_cleanup():
    ws = data.workspace()
    path = ws.name
    data.make_image_folder(path, n=2, size=16)
    ws.cleanup()
    import os

    assert not os.path.exists(path)


def test_token_sequences_respect_the_contract():
    samples = data.make_token_sequences(n=300, median_length=20, max_length=64, vocab_size=50, seed=2)
    lengths = [len(t) for t, _ in samples]
    assert len(samples) == 300 and min(lengths) >= 1 and max(lengths) <= 64
    assert 14 <= float(np.median(lengths)) <= 26
    assert all(t.dtype == torch.long and t.min() >= 1 and t.max() < 50 for t, _ in samples)
    again = data.make_token_sequences(n=300, median_length=20, max_length=64, vocab_size=50, seed=2)
    assert all(torch.equal(x, y) for (x, _), (y, _) in zip(samples, again, strict=True))


def test_imbalanced_labels_have_the_exact_minority_count():
    labels = data.make_imbalanced_labels(n=1000, minority_fraction=0.1, seed=0)
    assert labels.sum().item() == 100 and labels.numel() == 1000
    assert labels[:100].sum().item() < 100  # shuffled, not sorted
    with pytest.raises(ValueError, match="minority_fraction"):
        data.make_imbalanced_labels(minority_fraction=1.5)


def test_metadata_list_and_array_hold_the_same_rows():
    rows = data.make_metadata(n_rows=1000, row_chars=32)
    arr = data.metadata_array(rows)
    assert len(rows) == len(set(rows)) == 1000 and all(len(r) == 32 for r in rows)
    assert arr.dtype == np.dtype("S32") and arr[7].decode() == rows[7]
    assert len(rows[3]) == len(arr[3]) == 32 and arr[3].decode() == rows[3]
    with pytest.raises(TypeError, match="rows"):
        data.metadata_array("not a list")
