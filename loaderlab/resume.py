"""Resuming an epoch in the middle (notebook 13): datasets with random augmentation, with and
without saved RNG state, and an interrupt-and-resume experiment for ``StatefulDataLoader``.

The Dataset classes and the ``worker_init_fn`` live here so that ``spawn`` workers can
unpickle them.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.data import Dataset, get_worker_info

from loaderlab.loaders import require_positive, same_batch, stop_workers

NOISE_SOURCES = ("dataset", "global")


class NoisyDataset(Dataset):
    """Returns ``(features[i] + noise, i)``: a fixed feature row plus a random augmentation.

    ``source="dataset"`` draws the noise from ``self.generator``, a ``torch.Generator`` the
    dataset holds (seed it per worker with ``seed_worker_generator``); ``source="global"``
    draws from torch's global RNG, as most transform libraries do (each DataLoader worker
    seeds it with ``base_seed + worker_id``). ``latency_s`` makes each fetch sleep (a slow read).
    Every fetch is counted in a shared-memory tensor, so ``fetches()`` sees the workers' reads.
    This class has no ``state_dict``: a ``StatefulDataLoader`` cannot save its generator.
    """

    def __init__(
        self, n: int = 64, dim: int = 4, source: str = "dataset", seed: int = 0, latency_s: float = 0.0
    ) -> None:
        require_positive(n, "n")
        require_positive(dim, "dim")
        if source not in NOISE_SOURCES:
            raise ValueError(f"source must be one of {NOISE_SOURCES}, got {source!r}")
        if isinstance(latency_s, bool) or not isinstance(latency_s, (int, float)) or latency_s < 0:
            raise ValueError(f"latency_s must be a number of seconds >= 0, got {latency_s!r}")
        self.n, self.dim, self.source, self.latency_s = n, dim, source, float(latency_s)
        self.features = torch.arange(n * dim, dtype=torch.float32).reshape(n, dim)
        self.generator = torch.Generator().manual_seed(seed)
        self.fetch_counts = torch.zeros(n, dtype=torch.int64).share_memory_()

    def fetches(self) -> int:
        """Return how many samples were fetched so far, in any process (workers included)."""
        return int(self.fetch_counts.sum())

    def __getstate__(self) -> dict[str, Any]:
        # A torch.Generator sent to a spawn/forkserver worker fails to unpickle there on torch
        # 2.13 ("unable to resize file <filename not specified>", rebuild_storage_fd): its
        # state travels as plain bytes instead.
        state = self.__dict__.copy()
        state["generator"] = self.generator.get_state().numpy().tobytes()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        generator = torch.Generator()
        generator.set_state(torch.frombuffer(bytearray(state["generator"]), dtype=torch.uint8))
        self.__dict__.update({**state, "generator": generator})

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        if not 0 <= index < self.n:
            raise IndexError(f"index {index} out of range for {self.n} samples")
        if self.latency_s:
            time.sleep(self.latency_s)
        self.fetch_counts[index] += 1  # one index is fetched by one worker at a time: no race
        generator = self.generator if self.source == "dataset" else None
        return self.features[index] + torch.rand(self.dim, generator=generator), index


class StatefulNoisyDataset(NoisyDataset):
    """``NoisyDataset`` that can save and restore its generator: ``state_dict`` returns
    ``{"generator": ByteTensor}``, ``load_state_dict`` puts it back.

    Having both methods makes it ``torchdata.stateful_dataloader.Stateful`` (a protocol
    checked with ``isinstance``), so a ``StatefulDataLoader`` saves it per worker.
    """

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Return the dataset's resumable state: its generator's state."""
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore the generator from ``state`` (as returned by ``state_dict``)."""
        if not isinstance(state, dict) or "generator" not in state:
            raise ValueError("state must be a dict with a 'generator' entry (from state_dict())")
        self.generator.set_state(state["generator"])


def seed_worker_generator(worker_id: int) -> None:
    """A ``worker_init_fn``: returns None after seeding the worker's dataset generator with
    the worker's seed (``base_seed + worker_id``), so workers draw different noise."""
    info = get_worker_info()
    if info is None:
        raise RuntimeError("seed_worker_generator must run in a DataLoader worker")
    generator = getattr(info.dataset, "generator", None)
    if isinstance(generator, torch.Generator):
        generator.manual_seed(info.seed)


def checkpoint_roundtrip(state: dict[str, Any]) -> dict[str, Any]:
    """Return ``state`` after a ``torch.save`` / ``torch.load(weights_only=True)`` round trip
    through memory: what a training script gets back from a checkpoint file."""
    if not isinstance(state, dict):
        raise TypeError(f"state must be a dict, got {type(state).__name__}")
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@dataclass
class ResumeReport:
    """What ``interrupt_and_resume`` measured: batch counts, matches, and resume timing."""

    total: int  # batches in the uninterrupted epoch
    before: int  # batches taken before the interruption
    after: int  # batches the resumed loader yielded
    matches: list[bool] = field(repr=False)  # per batch of the epoch: same as uninterrupted?
    resume_first_batch_s: float = 0.0  # from iter(resumed loader) to its first batch
    resumed_fetches: int | None = None  # samples the resumed loader fetched (dataset.fetches())

    @property
    def exact(self) -> bool:
        """True if the interrupted + resumed epoch is batch for batch the uninterrupted one."""
        return self.before + self.after == self.total and all(self.matches)

    @property
    def mismatched(self) -> int:
        """How many batches differ from the uninterrupted run (missing ones count)."""
        return self.total - sum(self.matches)


def _drain(loader: Any, max_batches: int | None = None) -> tuple[list[Any], Any]:
    batches: list[Any] = []
    iterator = iter(loader)
    try:
        while max_batches is None or len(batches) < max_batches:
            try:
                batches.append(next(iterator))
            except StopIteration:
                break
        state = loader.state_dict() if max_batches is not None else None
    finally:
        stop_workers(iterator)
        del iterator
    return batches, state


def interrupt_and_resume(build: Callable[[], Any], k: int) -> ResumeReport:
    """Return a ResumeReport comparing one uninterrupted epoch with an epoch interrupted after
    ``k`` batches (``state_dict()`` saved through ``checkpoint_roundtrip``) and finished by a
    *new* loader from ``build()`` after ``load_state_dict``.

    ``build`` must return a fresh, identically configured ``StatefulDataLoader`` each call
    (same seeds), as a restarted training script would. Batches are compared with
    ``loaderlab.loaders.same_batch``.
    """
    if not callable(build):
        raise TypeError(f"build must be a callable returning a StatefulDataLoader, got {type(build).__name__}")
    require_positive(k, "k")
    reference, _ = _drain(build())
    if k >= len(reference):
        raise ValueError(f"k must be below the epoch's {len(reference)} batches, got {k}")
    loader = build()
    if not hasattr(loader, "load_state_dict"):
        raise TypeError("build() must return a loader with state_dict/load_state_dict (StatefulDataLoader)")
    first, state = _drain(loader, max_batches=k)
    resumed_loader = build()
    resumed_loader.load_state_dict(checkpoint_roundtrip(state))
    start = time.perf_counter()
    rest: list[Any] = []
    iterator = iter(resumed_loader)
    try:
        for batch in iterator:
            if not rest:
                first_s = time.perf_counter() - start
            rest.append(batch)
    finally:
        stop_workers(iterator)
        del iterator
    combined = first + rest
    matches = [i < len(combined) and same_batch(combined[i], ref) for i, ref in enumerate(reference)]
    counter = getattr(resumed_loader.dataset, "fetches", None)
    return ResumeReport(
        len(reference), len(first), len(rest), matches, first_s if rest else 0.0,
        counter() if callable(counter) else None,
    )
