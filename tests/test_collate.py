"""Unit tests for loaderlab.collate: padding, masks, padding waste, length bucketing."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import BatchSampler, DataLoader, SequentialSampler

from loaderlab.collate import (
    PAD_ID,
    BucketBatchSampler,
    DictTokenDataset,
    pad_collate,
    pad_dict_collate,
    padding_waste,
)
from loaderlab.data import make_token_sequences
from loaderlab.datasets import TokenDataset


def _batch(*lengths: int) -> list[tuple[torch.Tensor, int]]:
    return [(torch.arange(1, n + 1), i % 2) for i, n in enumerate(lengths)]


def test_pad_collate_shapes_values_and_mask():
    padded, mask, labels = pad_collate(_batch(3, 1, 5))
    assert padded.shape == (3, 5) and padded.dtype == torch.long
    assert mask.shape == (3, 5) and mask.dtype == torch.bool
    assert mask.sum(1).tolist() == [3, 1, 5]
    assert padded[0].tolist() == [1, 2, 3, PAD_ID, PAD_ID]
    assert padded[1].tolist() == [1, 0, 0, 0, 0]
    assert (padded[~mask] == PAD_ID).all() and (padded[mask] != PAD_ID).all()
    assert labels.tolist() == [0, 1, 0] and labels.dtype == torch.long


def test_pad_collate_width_is_the_batch_maximum_not_a_global_one():
    assert pad_collate(_batch(2, 2))[0].shape == (2, 2)
    assert pad_collate(_batch(2, 7, 4, 1))[0].shape == (4, 7)


def test_pad_collate_rejects_bad_input():
    with pytest.raises(ValueError, match="batch"):
        pad_collate([])
    with pytest.raises(TypeError, match=r"batch\[0\]"):
        pad_collate([torch.arange(3)])
    with pytest.raises(TypeError, match="torch.long"):
        pad_collate([(torch.ones(3), 0)])


def test_pad_collate_in_a_dataloader_with_workers(no_leaked_workers):
    dataset = TokenDataset(make_token_sequences(n=40, seed=1))
    loader = DataLoader(dataset, batch_size=8, collate_fn=pad_collate, num_workers=2)
    real = 0
    for padded, mask, labels in loader:
        assert padded.shape == mask.shape and labels.shape == (padded.shape[0],)
        assert mask.any(1).all()  # every row has at least one real token
        real += int(mask.sum())
    assert real == sum(dataset.lengths())


def test_pad_dict_collate_matches_pad_collate():
    samples = make_token_sequences(n=6, seed=2)
    out = pad_dict_collate([DictTokenDataset(samples)[i] for i in range(6)])
    padded, mask, labels = pad_collate(samples)
    assert set(out) == {"input_ids", "attention_mask", "labels"}
    assert torch.equal(out["input_ids"], padded) and torch.equal(out["attention_mask"], mask)
    assert torch.equal(out["labels"], labels)
    with pytest.raises(TypeError, match="input_ids"):
        pad_dict_collate([{"tokens": torch.arange(2), "label": 0}])


def test_padding_waste_counts_pad_tokens():
    lengths = [2, 4, 4, 4]
    assert padding_waste([[1, 2, 3]], lengths) == 0.0
    # [0, 1] padded to 4: 2 pad of 8; [2, 3]: 0 pad of 8 -> 2 / 16
    assert padding_waste([[0, 1], [2, 3]], lengths) == pytest.approx(2 / 16)
    by_two = BatchSampler(SequentialSampler(lengths), 2, False)
    assert padding_waste(by_two, lengths) == pytest.approx(2 / 16)
    with pytest.raises(ValueError, match="lengths"):
        padding_waste([[0]], [])
    with pytest.raises(ValueError, match="empty"):
        padding_waste([], [1, 2])


def _lognormal_lengths(n: int = 2048) -> list[int]:
    return TokenDataset(make_token_sequences(n=n, seed=0)).lengths()


def test_bucket_sampler_yields_every_index_once_per_epoch():
    lengths = _lognormal_lengths(1000)
    sampler = BucketBatchSampler(lengths, batch_size=32, pool_batches=8, seed=3)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        batches = list(sampler)
        flat = [i for b in batches for i in b]
        assert sorted(flat) == list(range(1000))
        assert len(batches) == len(sampler)
        assert all(1 <= len(b) <= 32 for b in batches)


def test_bucket_sampler_drop_last_length_matches():
    sampler = BucketBatchSampler(list(range(1, 101)), batch_size=16, pool_batches=2, drop_last=True)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 6  # pools of 32: 2+2+2 full batches, remainder 4 dropped
    assert all(len(b) == 16 for b in batches)


def test_bucket_sampler_changes_between_epochs_and_is_reproducible():
    lengths = _lognormal_lengths()
    sampler = BucketBatchSampler(lengths, batch_size=32, pool_batches=64, seed=0)
    epoch0 = list(sampler)
    assert list(sampler) == epoch0  # no set_epoch: same batches again
    sampler.set_epoch(1)
    epoch1 = list(sampler)
    shared = {tuple(sorted(b)) for b in epoch0} & {tuple(sorted(b)) for b in epoch1}
    assert len(shared) < len(epoch0) // 4
    assert [b[0] for b in epoch0] != [b[0] for b in epoch1]
    again = BucketBatchSampler(lengths, batch_size=32, pool_batches=64, seed=0)
    again.set_epoch(1)
    assert list(again) == epoch1
    other_seed = BucketBatchSampler(lengths, batch_size=32, pool_batches=64, seed=1)
    other_seed.set_epoch(1)
    assert list(other_seed) != epoch1


def test_bucketing_cuts_padding_waste_below_ten_percent():
    lengths = _lognormal_lengths()
    random_batches = BucketBatchSampler(lengths, batch_size=32, pool_batches=1, seed=0)
    bucketed = BucketBatchSampler(lengths, batch_size=32, pool_batches=64, seed=0)
    assert padding_waste(random_batches, lengths) > 0.5
    assert padding_waste(bucketed, lengths) < 0.10


def test_bucket_sampler_validates_arguments():
    with pytest.raises(ValueError, match="lengths"):
        BucketBatchSampler([], batch_size=4)
    with pytest.raises(ValueError, match="batch_size"):
        BucketBatchSampler([1, 2], batch_size=0)
    with pytest.raises(TypeError, match="seed"):
        BucketBatchSampler([1, 2], batch_size=1, seed=1.5)
    with pytest.raises(ValueError, match="epoch"):
        BucketBatchSampler([1, 2], batch_size=1).set_epoch(-1)


def test_bucket_sampler_as_batch_sampler_in_a_dataloader():
    dataset = TokenDataset(make_token_sequences(n=100, seed=4))
    sampler = BucketBatchSampler(dataset.lengths(), batch_size=10, pool_batches=10)
    loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=pad_collate)
    seen = sum(int(mask.sum()) for _, mask, _ in loader)
    assert seen == sum(dataset.lengths()) and len(loader) == 10
