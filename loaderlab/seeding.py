"""Random numbers in DataLoader workers: probe Datasets, ``worker_init_fn``s and counters.

The Datasets and ``worker_init_fn``s live in the package (not in notebook cells) so that
workers started with ``spawn`` or ``forkserver`` can unpickle them.

Contract used by the labs: a Dataset that draws augmentation parameters keeps its generator
in ``self.rng``; ``reseed_from_worker_info`` replaces ``get_worker_info().dataset.rng`` with
a generator of the same kind seeded from ``get_worker_info().seed``.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, get_worker_info

from loaderlab.loaders import require_positive

GENERATOR_KINDS = ("numpy", "random", "torch")
Generator = np.random.Generator | random.Random | torch.Generator


def source_lines(function: Callable[..., Any], contains: str | Sequence[str]) -> list[str]:
    """Return the lines of ``function``'s source code that contain any of ``contains``
    (indentation kept relative to the shallowest line returned)."""
    if not callable(function):
        raise TypeError(f"function must be callable, got {type(function).__name__}")
    needles = [contains] if isinstance(contains, str) else list(contains)
    if not needles or not all(isinstance(n, str) and n for n in needles):
        raise ValueError("contains must be a non-empty string or a list of them")
    lines = [line for line in inspect.getsource(function).splitlines() if any(n in line for n in needles)]
    indent = min((len(line) - len(line.lstrip()) for line in lines), default=0)
    return [line[indent:] for line in lines]


def make_generator(kind: str, seed: int) -> Generator:
    """Return a new generator of ``kind`` ("numpy", "random" or "torch") seeded with ``seed``."""
    if kind not in GENERATOR_KINDS:
        raise ValueError(f"kind must be one of {GENERATOR_KINDS}, got {kind!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    if kind == "numpy":
        return np.random.default_rng(seed)
    if kind == "random":
        return random.Random(seed)
    return torch.Generator().manual_seed(seed)


def generator_kind(rng: Any) -> str:
    """Return the kind ("numpy", "random" or "torch") of a generator object."""
    if isinstance(rng, np.random.Generator):
        return "numpy"
    if isinstance(rng, random.Random):
        return "random"
    if isinstance(rng, torch.Generator):
        return "torch"
    raise TypeError(f"rng must be a numpy Generator, random.Random or torch.Generator, got {type(rng).__name__}")


def draw(rng: Generator) -> float:
    """Return one uniform float in [0, 1) drawn from ``rng`` (any of the three kinds)."""
    kind = generator_kind(rng)
    if kind == "numpy":
        return float(rng.random())
    if kind == "random":
        return rng.random()
    return float(torch.rand((), generator=rng, dtype=torch.float64))


def _worker_id() -> int:
    info = get_worker_info()
    return info.id if info is not None else -1


class GlobalDraws(Dataset):
    """Each sample draws from the *global* generators of the process that fetches it.

    Returns a float64 tensor ``[index, worker id, random.random(), np.random.random(),
    torch.rand(())]`` (worker id -1 in the main process).
    """

    columns = ("index", "worker", "random", "numpy", "torch")

    def __init__(self, n: int = 12) -> None:
        self.n = require_positive(n, "n")

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        values = [index, _worker_id(), random.random(), float(np.random.random()), float(torch.rand(()))]
        return torch.tensor(values, dtype=torch.float64)


class HeldGeneratorDraws(Dataset):
    """A Dataset that creates its own generator in ``__init__`` (``self.rng``, seeded with
    ``seed``) and draws one "augmentation parameter" from it per sample.

    ``kind`` is "numpy" (``np.random.default_rng``), "random" (``random.Random``) or "torch"
    (``torch.Generator``). Returns a float64 tensor ``[index, worker id, draw]``.
    """

    columns = ("index", "worker", "draw")

    def __init__(self, n: int = 12, kind: str = "numpy", seed: int = 0) -> None:
        self.n = require_positive(n, "n")
        self.rng = make_generator(kind, seed)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor([index, _worker_id(), draw(self.rng)], dtype=torch.float64)

    def __getstate__(self) -> dict[str, Any]:
        # torch 2.13 cannot send a torch.Generator itself to a spawn/forkserver worker (its
        # pickled state fails to rebuild there: "unable to resize file"), so its state travels
        # as plain bytes; the worker still receives an exact copy of the generator.
        state = dict(self.__dict__)
        if isinstance(self.rng, torch.Generator):
            state["rng"] = ("torch-state", bytes(self.rng.get_state().numpy()))
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        rng = state["rng"]
        if isinstance(rng, tuple) and rng[0] == "torch-state":
            generator = torch.Generator()
            generator.set_state(torch.frombuffer(bytearray(rng[1]), dtype=torch.uint8))
            state["rng"] = generator
        self.__dict__.update(state)


def reseed_from_worker_info(worker_id: int) -> None:
    """A ``worker_init_fn``: returns None after replacing ``get_worker_info().dataset.rng`` by a
    generator of the same kind seeded from ``get_worker_info().seed``.

    That seed is ``base_seed + worker_id``; ``base_seed`` is drawn anew for every epoch (unless
    workers persist) from the loader's ``generator``, so draws differ across workers and
    epochs and still repeat exactly for the same ``generator`` seed.
    """
    info = get_worker_info()
    if info is None:
        raise RuntimeError("reseed_from_worker_info must run inside a DataLoader worker")
    dataset = info.dataset
    if not hasattr(dataset, "rng"):
        raise AttributeError(f"{type(dataset).__name__} has no rng attribute to reseed")
    dataset.rng = make_generator(generator_kind(dataset.rng), info.seed)


def seed_globals_from_initial_seed(worker_id: int) -> None:
    """A ``worker_init_fn``: returns None after seeding the *global* ``random`` and NumPy
    generators from ``torch.initial_seed()`` — the classic fix, which today's torch already
    does by itself and which leaves generators held by the Dataset untouched."""
    seed = torch.initial_seed() % 2**32
    random.seed(seed)
    np.random.seed(seed)


class InheritedNumpyState:
    """A ``worker_init_fn`` that returns None after restoring NumPy's global state as it was in
    the parent when this object was made: every worker then draws what the parent would have,
    as workers did before torch 1.9 started to reseed NumPy in each worker."""

    def __init__(self) -> None:
        self.state = np.random.get_state()

    def __call__(self, worker_id: int) -> None:
        np.random.set_state(self.state)


