"""Every snippet is imported and exercised; docs/recipes.md and the one-page docs/cheatsheet.md match
the snippet files."""

from __future__ import annotations

import subprocess
import sys
import time
import warnings
from collections import Counter

import numpy as np
import pytest
import torch
import torch.distributed as dist
from course_code import ROOT, snippet
from torch.utils.data import ConcatDataset, DataLoader, Dataset, Subset, TensorDataset

from loaderlab.collate import padding_waste
from loaderlab.data import make_token_sequences
from loaderlab.distributed import free_port
from loaderlab.loaders import same_batches
from loaderlab.sampling import expected_class_fractions


class RandomAugment(Dataset):
    """Returns a draw from a generator the dataset owns (the pattern that repeats across workers)."""

    def __init__(self, n: int = 16) -> None:
        self.n, self.rng = n, np.random.default_rng(0)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> float:
        return float(self.rng.random())


class Slow(Dataset):
    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> int:
        time.sleep(3)
        return i


@pytest.mark.course
def test_cheatsheet_page_is_generated_from_the_snippets():
    result = subprocess.run(
        [sys.executable, "tools/make_cheatsheet.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout


def test_recipes_have_a_section_for_every_topic_01_to_16():
    page = (ROOT / "docs" / "recipes.md").read_text()
    sections = {line[3:5] for line in page.splitlines() if line.startswith("## ")}
    missing = [f"{n:02d}" for n in range(1, 17) if f"{n:02d}" not in sections]
    assert not missing, f"no cheat-sheet snippet names notebook(s) {missing}"


def test_the_cheat_sheet_is_one_recipe_per_pitfall_short_enough_to_print():
    from tools import make_cheatsheet

    page = (ROOT / "docs" / "cheatsheet.md").read_text()
    symptoms = [symptom for symptom, *_ in make_cheatsheet.PITFALLS]
    assert len(set(symptoms)) == len(symptoms) >= 12
    assert page.count("```python") == len(symptoms)
    # two printed pages in two columns hold about 2 x 2 x 60 lines; the site's print test measures it
    # (tests/test_site.py, A4 through Chromium): 220 leaves a margin under those 240
    assert len(page.splitlines()) <= 220, len(page.splitlines())
    assert "manual_seed(base_seed + worker_id)" not in page and ".dataset.rng =" not in page


@pytest.mark.parametrize("num_workers", [0, 2])
def test_loader_configs_train_drops_the_tiny_batch_and_val_sees_everything(num_workers, no_leaked_workers):
    data = TensorDataset(torch.arange(65.0))
    train, val = snippet("loader_configs").make_loaders(data, data, batch_size=32, num_workers=num_workers)
    assert [len(b[0]) for b in train] == [32, 32]
    assert sorted(torch.cat([b[0] for b in val]).tolist()) == list(range(65))
    del train, val


def test_pad_collate_pads_to_the_batch_maximum_with_a_padding_mask_true_at_padding():
    batch = [(torch.tensor([5, 6, 7]), 1), (torch.tensor([0]), 0)]
    padded, padding_mask, labels = snippet("pad_collate").pad_collate(batch)
    assert padded.tolist() == [[5, 6, 7], [0, 0, 0]]
    assert padding_mask.tolist() == [[False, False, False], [False, True, True]]  # key_padding_mask
    assert labels.tolist() == [1, 0]


def test_bucketing_covers_each_index_once_cuts_waste_and_reshuffles():
    lengths = [len(t) for t, _ in make_token_sequences(n=4096, seed=1)]
    sampler = snippet("bucketing").BucketBatchSampler(lengths, batch_size=32, pool_size=2048)
    epochs = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        batches = list(sampler)
        assert len(batches) == len(sampler)
        assert sorted(i for b in batches for i in b) == list(range(4096))
        assert max(len(b) for b in batches) <= 32
        assert padding_waste(batches, lengths) < 0.10
        epochs.append(batches)
    assert epochs[0] != epochs[1]


def test_worker_seeding_draws_differ_across_workers_and_epochs_also_in_a_subset(no_leaked_workers):
    noisy = snippet("worker_seeding").NoisySamples
    # wrapped: no worker_init_fn reaches it
    dataset = Subset(noisy(torch.zeros(16, dtype=torch.float64)), range(16))
    dataset[0]  # a draw in the main process first: its generator must not travel to the workers
    loader = DataLoader(dataset, batch_size=4, num_workers=2, generator=torch.Generator().manual_seed(0))
    values = [v for _ in range(2) for batch in loader for v in batch.tolist()]
    assert len(values) == 32 and len(set(values)) == 32  # no repeats across workers or epochs
    again = DataLoader(dataset, batch_size=4, num_workers=2, generator=torch.Generator().manual_seed(0))
    assert [v for batch in again for v in batch.tolist()] == values[:16]  # same seed, same draws
    joined = ConcatDataset([noisy(torch.zeros(8, dtype=torch.float64), seed=s) for s in (1, 2)])
    values = [v for batch in DataLoader(joined, batch_size=4, num_workers=2) for v in batch.tolist()]
    assert len(set(values)) == 16  # one worker fetches both datasets: their own seeds keep them apart


def test_reproducible_loader_repeats_order_and_worker_randomness_for_the_same_num_workers(no_leaked_workers):
    make = snippet("reproducible_loader").reproducible_loader
    noisy = snippet("worker_seeding").NoisySamples

    def loader(seed, num_workers):
        return make(
            noisy(torch.zeros(12, dtype=torch.float64)), seed=seed, num_workers=num_workers, batch_size=3
        )

    assert same_batches(loader(7, 2), loader(7, 2))
    assert not same_batches(loader(7, 2), loader(8, 2))
    with warnings.catch_warnings():  # 3 workers on 2 cores: torch's advice is about speed
        warnings.simplefilter("ignore", UserWarning)
        assert not same_batches(loader(7, 2), loader(7, 3))  # num_workers belongs with the seed


@pytest.mark.parametrize("num_workers", [0, 1, 2, 3])
def test_sharded_iterable_reads_every_item_once(num_workers, no_leaked_workers):
    loader = DataLoader(
        snippet("sharded_iterable").RankWorkerShardedStream(29), batch_size=4, num_workers=num_workers
    )
    with warnings.catch_warnings():  # 3 workers exceed the suggested maximum on 2 cores
        warnings.simplefilter("ignore", UserWarning)
        items = [int(i) for batch in loader for i in batch]
    assert sorted(items) == list(range(29))


def test_balanced_weights_give_every_class_the_same_probability():
    labels = [0] * 90 + [1] * 9 + [2]
    sampler = snippet("balanced_weights").balanced_sampler(labels, generator=torch.Generator().manual_seed(0))
    fractions = expected_class_fractions(sampler.weights.tolist(), labels)
    assert np.allclose(list(fractions.values()) if isinstance(fractions, dict) else fractions, 1 / 3)
    drawn = Counter(labels[i] for i in sampler)
    assert set(drawn) == {0, 1, 2}


def test_ddp_epoch_loop_reshuffles_and_evaluation_counts_each_sample_once():
    ddp = snippet("ddp_epochs")
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        data = TensorDataset(torch.arange(10))
        orders = []
        ddp.train_epochs(data, num_epochs=2, train_step=lambda b: orders.append(b[0].tolist()), batch_size=10)
        assert orders[0] != orders[1] and sorted(orders[0]) == list(range(10))
        labelled = TensorDataset(torch.eye(2)[torch.arange(10) % 2], torch.zeros(10, dtype=torch.long))
        model = torch.nn.Linear(2, 2, bias=False)
        torch.nn.init.eye_(model.weight)  # logits = x: predicts class i % 2, half right
        accuracy = ddp.evaluate(model, labelled, batch_size=3)
        assert accuracy == pytest.approx(0.5)
    finally:
        dist.destroy_process_group()


@pytest.mark.course
@pytest.mark.timing
def test_guarded_loader_turns_a_hang_into_an_error(no_leaked_workers):
    loader = snippet("timeouts_and_debugging").guarded_loader(
        Slow(), batch_size=1, num_workers=1, timeout_s=1
    )
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="timed out"):
        next(iter(loader))
    assert time.monotonic() - start < 8  # 1 s timeout + joining the sleeping worker
