"""Notebooks 09 and 10's snippets: undersampling draws a weighted subsample without repeats,
the expected share matches the draws, and the unpadded evaluation sampler (plain torch, in
ddp_epochs.py) deals DistributedSampler's permutation so every sample is scored exactly once;
it is the class notebook 10 shows in a cell."""

from __future__ import annotations

from collections import Counter

import nbformat
import pytest
import torch
import torch.distributed as dist
from course_code import ROOT, snippet
from torch.utils.data import DistributedSampler, TensorDataset

from loaderlab.distributed import free_port


def test_undersampling_loader_draws_distinct_samples_favouring_the_heavy_class():
    labels = torch.zeros(2000, dtype=torch.long)
    labels[:200] = 1
    weights = torch.tensor([0.2, 1.0], dtype=torch.double)[labels]
    loader = snippet("undersampling").undersampling_loader(
        TensorDataset(torch.arange(2000), labels),
        weights,
        num_samples=400,
        batch_size=64,
        generator=torch.Generator().manual_seed(0),
    )
    epochs = [torch.cat([index for index, _ in loader]) for _ in range(2)]
    for drawn in epochs:
        assert len(drawn) == 400 and len(drawn.unique()) == 400  # no sample twice in an epoch
        share = (labels[drawn] == 1).double().mean().item()
        assert 0.2 < share < 200 / 560  # far above the 10 % base rate, below the with-replacement share
    assert not torch.equal(epochs[0], epochs[1])  # a new subsample every epoch


def test_undersampling_loader_refuses_more_draws_than_samples_at_once():
    with pytest.raises(ValueError, match="exceeds the 10 samples"):
        snippet("undersampling").undersampling_loader(TensorDataset(torch.arange(10)), [1.0] * 10, 11)


def test_expected_share_is_the_class_weight_over_the_total_and_matches_the_draws():
    bw = snippet("balanced_weights")
    labels = [0] * 900 + [1] * 100
    weights = [0.2 if y == 0 else 1.0 for y in labels]
    assert bw.expected_share(weights, labels, 1) == pytest.approx(100 / 280)
    sampler = bw.balanced_sampler(labels, num_samples=20_000, generator=torch.Generator().manual_seed(0))
    assert bw.expected_share(sampler.weights, labels, 1) == pytest.approx(0.5)
    drawn = Counter(labels[i] for i in sampler)
    assert abs(drawn[1] / 20_000 - 0.5) < 0.02


@pytest.mark.parametrize("n", [10, 12, 7])
@pytest.mark.parametrize("world", [1, 3, 4])
def test_unpadded_sampler_scores_every_sample_once_in_distributed_samplers_order(n, world):
    sampler_cls = snippet("ddp_epochs").UnpaddedDistributedSampler
    shards = []
    for rank in range(world):
        sampler = sampler_cls(range(n), num_replicas=world, rank=rank, shuffle=True, seed=3)
        sampler.set_epoch(2)
        shards.append(list(sampler))
        assert len(sampler) == len(shards[-1])
        reference = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=True, seed=3)
        reference.set_epoch(2)
        assert shards[-1] == list(reference)[: len(shards[-1])]  # the same permutation, unpadded
    assert sorted(i for shard in shards for i in shard) == list(range(n))
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


def test_unpadded_sampler_asks_the_process_group_and_evaluate_counts_each_sample_once():
    ddp = snippet("ddp_epochs")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        sampler = ddp.UnpaddedDistributedSampler(range(5))
        assert (sampler.num_replicas, sampler.rank, list(sampler)) == (1, 0, [0, 1, 2, 3, 4])
        x = torch.eye(2)[torch.tensor([0, 1, 0, 1, 0, 1, 0])]  # logits: class = x's hot column
        y = torch.tensor([0, 1, 1, 1, 0, 0, 0])  # 5 of 7 right
        model = torch.nn.Linear(2, 2, bias=False)
        torch.nn.init.eye_(model.weight)  # the identity: logits = x
        assert ddp.evaluate(model, TensorDataset(x, y), batch_size=3) == pytest.approx(5 / 7)
    finally:
        dist.destroy_process_group()


def test_notebook_10_shows_the_snippets_unpadded_sampler_and_evaluate_in_cells():
    text = (ROOT / "docs" / "snippets" / "ddp_epochs.py").read_text()
    cls = text[text.index("class UnpaddedDistributedSampler") : text.index("\n\n\ndef evaluate")]
    evaluate = text[text.index("def evaluate") :].strip()
    notebook = nbformat.read(ROOT / "notebooks" / "10_distributed_sampling.ipynb", as_version=4)
    cells = [c.source for c in notebook.cells]
    assert cls in cells and evaluate in cells
