"""Datasets that hold hundreds of tensors still start forkserver and spawn workers."""

from __future__ import annotations

import multiprocessing
import pickle

import pytest
import torch
from torch.utils.data import DataLoader

from loaderlab.caching import CachedDataset
from loaderlab.data import make_token_sequences
from loaderlab.datasets import FewTensorsWhenPickled, TokenDataset

HAS_FORKSERVER = "forkserver" in multiprocessing.get_all_start_methods()


def test_a_pickled_copy_holds_the_same_tensors_as_views_of_one_per_dtype():
    samples = make_token_sequences(n=300, seed=1)
    dataset = TokenDataset(samples)
    copy = pickle.loads(pickle.dumps(dataset))
    assert len(copy) == 300
    for (tokens, label), (tokens2, label2) in zip(samples, copy.samples, strict=True):
        assert label2 == label and tokens2.dtype == tokens.dtype and torch.equal(tokens2, tokens)
    storages = {t.untyped_storage().data_ptr() for t, _ in copy.samples}
    assert len(storages) == 1
    assert dataset.samples[0][0] is samples[0][0]  # pickling left the original alone
    assert "_packed_keepalive" not in copy.__dict__


class Holder(FewTensorsWhenPickled):
    pass


def test_mixed_dtypes_and_nested_samples_round_trip():
    holder = Holder()
    holder.cache = {0: (torch.ones(2, 3), torch.tensor(7)), 1: [torch.arange(4), {"m": torch.zeros(1, dtype=torch.bool)}]}
    holder.name = "x"
    copy = pickle.loads(pickle.dumps(holder))
    assert copy.name == "x"
    assert torch.equal(copy.cache[0][0], torch.ones(2, 3)) and copy.cache[0][1].item() == 7
    assert torch.equal(copy.cache[1][0], torch.arange(4)) and copy.cache[1][1]["m"].dtype == torch.bool


@pytest.mark.skipif(not HAS_FORKSERVER, reason="no forkserver on this platform")
@pytest.mark.parametrize("make", ["tokens", "cache"])
def test_forkserver_workers_start_with_300_tensors_in_the_dataset(make, no_leaked_workers):
    if make == "tokens":
        dataset = TokenDataset(make_token_sequences(n=300, seed=2))
        collate = list
    else:
        dataset = CachedDataset(TokenDataset([(torch.full((3,), float(i)), i) for i in range(300)]), preload=True)
        collate = list
    expected = [[(t.tolist(), y) for t, y in batch] for batch in DataLoader(dataset, batch_size=50, collate_fn=collate)]
    loader = DataLoader(dataset, batch_size=50, collate_fn=collate, num_workers=1,
                        multiprocessing_context="forkserver", timeout=120)
    got = [[(t.tolist(), y) for t, y in batch] for batch in loader]
    assert got == expected
