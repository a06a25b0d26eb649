"""Checks of loaderlab.resume: noisy datasets, saved RNG state, interrupt-and-resume reports."""

from __future__ import annotations

import pytest
import torch
from torchdata.stateful_dataloader import StatefulDataLoader
from torchdata.stateful_dataloader.stateful import Stateful

from loaderlab.resume import (
    NoisyDataset,
    ResumeReport,
    StatefulNoisyDataset,
    checkpoint_roundtrip,
    interrupt_and_resume,
    seed_worker_generator,
)


def _build(dataset_class=StatefulNoisyDataset, num_workers=2, snapshot_every_n_steps=1, n=32):
    return StatefulDataLoader(dataset_class(n=n), batch_size=4, shuffle=True,
                              generator=torch.Generator().manual_seed(1), num_workers=num_workers,
                              worker_init_fn=seed_worker_generator if num_workers else None,
                              snapshot_every_n_steps=snapshot_every_n_steps)


def test_noisy_dataset_validates():
    with pytest.raises(ValueError):
        NoisyDataset(source="numpy")
    with pytest.raises(ValueError):
        NoisyDataset(latency_s=-1)
    with pytest.raises(TypeError):
        NoisyDataset(n=2.5)
    with pytest.raises(IndexError):
        NoisyDataset(n=4)[4]


def test_noise_is_added_and_fetches_counted():
    dataset = NoisyDataset(n=4, dim=3)
    x, i = dataset[2]
    assert i == 2 and x.shape == (3,)
    assert torch.all(x >= dataset.features[2]) and torch.all(x < dataset.features[2] + 1)
    dataset[2]
    assert dataset.fetches() == 2


def test_only_the_stateful_class_is_stateful():
    assert isinstance(StatefulNoisyDataset(), Stateful)
    assert not isinstance(NoisyDataset(), Stateful)


def test_state_dict_restores_the_noise():
    dataset = StatefulNoisyDataset(n=4)
    state = dataset.state_dict()
    first = dataset[0][0]
    assert not torch.equal(dataset[0][0], first)
    dataset.load_state_dict(state)
    assert torch.equal(dataset[0][0], first)
    with pytest.raises(ValueError):
        dataset.load_state_dict({})


def test_checkpoint_roundtrip_keeps_tensors():
    state = {"a": torch.arange(3), "b": {"c": 1}}
    back = checkpoint_roundtrip(state)
    assert torch.equal(back["a"], state["a"]) and back["b"] == {"c": 1}
    with pytest.raises(TypeError):
        checkpoint_roundtrip([1])


def test_seed_worker_generator_needs_a_worker():
    with pytest.raises(RuntimeError):
        seed_worker_generator(0)


def test_resume_is_exact_only_with_dataset_state(no_leaked_workers):
    saved = interrupt_and_resume(_build, k=3)
    assert (saved.total, saved.before, saved.after) == (8, 3, 5)
    assert saved.exact and saved.mismatched == 0
    lost = interrupt_and_resume(lambda: _build(NoisyDataset), k=3)
    assert not lost.exact and lost.mismatched == lost.after == 5
    assert lost.matches[:3] == [True, True, True]


def test_snapshot_interval_replays_batches(no_leaked_workers):
    every = interrupt_and_resume(lambda: _build(snapshot_every_n_steps=1), k=3)
    rarely = interrupt_and_resume(lambda: _build(snapshot_every_n_steps=8), k=3)
    assert every.exact and rarely.exact
    assert every.resumed_fetches == 32 - 12 and rarely.resumed_fetches == 32


def test_interrupt_and_resume_validates():
    with pytest.raises(TypeError):
        interrupt_and_resume("build", k=1)
    with pytest.raises(ValueError):
        interrupt_and_resume(lambda: _build(num_workers=0), k=8)  # the epoch has 8 batches


def test_report_properties():
    report = ResumeReport(total=3, before=1, after=1, matches=[True, True, False])
    assert not report.exact and report.mismatched == 1


def test_pickling_keeps_the_generator_state():
    import pickle

    dataset = NoisyDataset(n=4)
    dataset[0]
    copy = pickle.loads(pickle.dumps(dataset))
    assert torch.equal(copy.generator.get_state(), dataset.generator.get_state())
    assert torch.equal(copy[1][0], dataset[1][0])
