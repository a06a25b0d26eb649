"""Checker for lab 13: an epoch over ``make_dataset(seed)`` interrupted after ``K`` batches, its state
through ``torch.save`` / ``torch.load(weights_only=True)`` into a fresh StatefulDataLoader over a fresh
dataset, must equal an uninterrupted one, with 0 and 2 workers (a class of the notebook is forked;
where fork does not exist, Windows, it is checked without workers)."""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch.utils.data import Dataset, IterableDataset

from loaderlab.checks.report import Wrong, bounded, checker, compare, epoch, first_diff, one_line
from loaderlab.env import worker_start_method
from loaderlab.loaders import same_batch, stop_workers

HINT = "Hint: notebook 13, sections 2 and 4"
SEED, N, BATCH, K = 3, 24, 4, 2  # 6 batches, interrupted after 2
TIMEOUT_S = 30.0  # per batch: spawned workers import torch first
BOUND_S = 60.0  # the checks without workers (they take a second): a __getitem__ that never returns


def _loader(make_dataset: Callable[[int], Dataset], num_workers: int, method: str | None) -> Any:
    """A StatefulDataLoader over a fresh ``make_dataset(SEED)``."""
    from torchdata.stateful_dataloader import StatefulDataLoader  # imported when a lab asks

    workers = {"multiprocessing_context": method, "timeout": TIMEOUT_S} if num_workers else {}
    return StatefulDataLoader(
        make_dataset(SEED),
        batch_size=BATCH,
        shuffle=True,
        num_workers=num_workers,
        generator=torch.Generator().manual_seed(7),
        **workers,
    )


def _resumed_epochs_agree(
    make_dataset: Callable[[int], Dataset], workers: int, method: str | None
) -> list[Any]:
    """Raise Wrong unless an epoch interrupted after K batches, then finished by a fresh loader over a
    fresh dataset, equals an uninterrupted one; return the latter."""
    reference, loader = epoch(_loader(make_dataset, workers, method)), _loader(make_dataset, workers, method)
    try:
        resumed, checkpoint = epoch(loader, K, stop=False), io.BytesIO()  # its state is saved first
        try:
            torch.save({"loader": loader.state_dict()}, checkpoint)
            checkpoint.seek(0)
            state = torch.load(checkpoint, weights_only=True)["loader"]
        except NotImplementedError:
            raise  # the lab's stub: not attempted yet
        except Exception as exc:
            raise Wrong(
                f"the loader's state_dict() did not survive torch.save and "
                f"torch.load(weights_only=True) ({one_line(exc)[:80]}): your state_dict must return "
                f"tensors and plain values, e.g. generator.get_state(), not the Generator itself. "
                f"{HINT}"
            ) from None
    finally:
        stop_workers(loader._iterator)  # the interrupted job ends: its workers stop
    loader = _loader(make_dataset, workers, method)
    loader.load_state_dict(state)
    resumed += epoch(loader)
    compare(
        resumed,
        reference,
        count=f"with num_workers={workers} the resumed epoch had {len(resumed)} batches, the "
        f"uninterrupted one {len(reference)}. {HINT}",
        differ=lambda k: (
            f"with num_workers={workers}, batch {k} (the first {K} came before the "
            f"interrupt) differs from the uninterrupted run: after the resume each new "
            f"{'worker' if workers else 'dataset'} must continue its generator where "
            f"state_dict() saved it, so load_state_dict must put that state back. {HINT}"
        ),
    )
    return reference


def _without_workers(make_dataset: Callable[[int], Any]) -> tuple[Dataset, list[Any]]:
    """Check ``make_dataset(seed)`` and its resume without workers; return the dataset and its epoch."""
    dataset = make_dataset(SEED)
    if not isinstance(dataset, Dataset) or isinstance(dataset, IterableDataset):
        raise Wrong(
            f"make_dataset(seed) returned {type(dataset).__name__}: return a map-style Dataset "
            f"(__len__ and __getitem__). {HINT}"
        )
    if len(dataset) < N:
        raise Wrong(
            f"make_dataset(seed) has {len(dataset)} samples: the lab's has {N} (keep n's default). {HINT}"
        )
    missing = [m for m in ("state_dict", "load_state_dict") if not callable(getattr(dataset, m, None))]
    if missing:
        raise Wrong(
            f"your dataset has no {' and no '.join(missing)}: without both, StatefulDataLoader "
            f"cannot save where its random generator stands, and the resumed batches get "
            f"other noise. {HINT}"
        )
    if same_batch(dataset[0], dataset[0]):
        raise Wrong(
            "make_dataset(seed)[0] gave the same sample twice: the lab's dataset adds random "
            "noise (a new draw on every read), and that randomness is what must resume. " + HINT
        )
    if first_diff(epoch(_loader(make_dataset, 0, None)), epoch(_loader(make_dataset, 0, None))) is not None:
        raise Wrong(
            "two uninterrupted epochs over make_dataset(seed) gave different noise: draw it from a "
            "torch.Generator the dataset builds from its seed (torch's global RNG is not in "
            f"your state_dict). {HINT}"
        )
    return dataset, _resumed_epochs_agree(make_dataset, 0, None)


@checker
def check_resumable(make_dataset: Callable[[int], Dataset]) -> str:
    """Return a confirmation if a StatefulDataLoader over ``make_dataset(seed)``, interrupted
    mid-epoch and resumed from its state_dict() by a fresh loader over a fresh dataset, yields
    exactly the batches of an uninterrupted epoch, with 0 and 2 workers; raise Wrong otherwise."""
    overran = (
        f"reading make_dataset(seed) without workers did not finish within {BOUND_S:g} s: does "
        f"__getitem__ return? {HINT}"
    )
    with warnings.catch_warnings():  # torchdata 0.11 calls torch.set_vital, deprecated in torch 2.13
        warnings.filterwarnings("ignore", message="'set_vital' is deprecated")
        with bounded(BOUND_S, overran):
            dataset, reference = _without_workers(make_dataset)
        method = worker_start_method(dataset)
        if method:
            _resumed_epochs_agree(make_dataset, 2, method)
    where = (
        f"real workers started by {method}"
        if method
        else "0 workers only: your class is defined in the notebook and this platform cannot fork"
    )
    return (
        f"interrupted after {K} of {len(reference)} batches and resumed by a fresh loader over a fresh "
        f"dataset, every batch equals the uninterrupted run's, with num_workers "
        f"{[0, 2] if method else [0]} ({where})"
    )
