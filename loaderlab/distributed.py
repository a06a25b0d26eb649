"""Distributed sampling helpers: ``free_port`` (notebook 10 hands it to torchrun) and
``rank_shards`` (what each rank's ``DistributedSampler`` yields: the lab 10 checker's reference).
Notebooks 10-12 launch torchrun and scripts with ``loaderlab.bounded.run_bounded``."""

from __future__ import annotations

import socket
from typing import Any

from torch.utils.data import DistributedSampler

from loaderlab._validate import require_positive


def _size(dataset_or_n: Any) -> int:
    if isinstance(dataset_or_n, int) and not isinstance(dataset_or_n, bool):
        return require_positive(dataset_or_n, "dataset_or_n")
    try:
        return len(dataset_or_n)
    except TypeError:
        raise TypeError(
            f"dataset_or_n must be an int or a sized dataset, got {type(dataset_or_n).__name__}"
        ) from None


def rank_shards(
    dataset_or_n: Any,
    num_replicas: int,
    epoch: int = 0,
    sampler_cls: type = DistributedSampler,
    **sampler_kwargs: Any,
) -> list[list[int]]:
    """Return the indices that each rank's sampler yields in ``epoch``, one list per rank.

    Builds ``sampler_cls(dataset, num_replicas=..., rank=r, **sampler_kwargs)`` for every rank
    ``r`` (``DistributedSampler`` by default) and calls ``set_epoch(epoch)`` first.
    """
    n = _size(dataset_or_n)
    require_positive(num_replicas, "num_replicas")
    dataset = range(n)
    shards = []
    for rank in range(num_replicas):
        sampler = sampler_cls(dataset, num_replicas=num_replicas, rank=rank, **sampler_kwargs)
        sampler.set_epoch(epoch)
        shards.append([int(i) for i in sampler])
    return shards


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
