"""Checker for lab 10: a distributed epoch loop with ``set_epoch`` and an exactly-once evaluation.

Ranks are simulated in one process (explicit ``num_replicas`` / ``rank``): the training orders are
compared exactly with ``DistributedSampler`` after ``set_epoch(epoch)``; the evaluation shards must
cover every sample exactly once.
"""

from __future__ import annotations

import collections
import operator
from collections.abc import Callable
from typing import Any

import torch

from loaderlab.checks.report import Wrong, checker
from loaderlab.distributed import rank_shards

TRAIN_HINT = "Hint: notebook 10, section '2. The same order every epoch — unless you call set_epoch'."
EVAL_HINT = "Hint: notebook 10, section '4. Padding skews an evaluation metric'."
TRAIN_CASES = ((10, 3, 3, 0), (7, 2, 3, 5))  # dataset_len, world_size, epochs, seed
EVAL_CASES = ((10, 4), (10, 3), (7, 2))  # dataset_len, world_size: none divides


def reference_orders(
    dataset_len: int, world_size: int, epochs: int, seed: int, **sampler_kwargs: Any
) -> list[list[list[int]]]:
    """Return, per epoch and rank, the indices ``DistributedSampler(shuffle=True, seed=seed)``
    yields after ``set_epoch(epoch)`` (the contract of ``train_orders``)."""
    return [rank_shards(dataset_len, world_size, epoch=e, seed=seed, **sampler_kwargs) for e in range(epochs)]


def _index(value: Any, where: str, hint: str) -> int:
    """Return ``value`` as an int index (ints, NumPy ints and 0-d integer tensors pass)."""
    if isinstance(value, torch.Tensor) and value.dim() > 0:
        raise Wrong(
            f"{where} holds a tensor of {value.numel()} items where an index belongs: "
            f"flatten the loader's batches into ints (e.g. `+= batch.tolist()`). {hint}"
        )
    if isinstance(value, bool):
        raise Wrong(f"{where} holds {value!r} where an int index belongs. {hint}")
    try:
        return operator.index(value)
    except TypeError:
        raise Wrong(
            f"{where} holds {value!r} ({type(value).__name__}) where an int index belongs. {hint}"
        ) from None


def _entries(result: Any, count: int, what: str, hint: str) -> list | tuple:
    """Return ``result`` if it is a list or tuple of ``count`` entries, else raise Wrong."""
    if not isinstance(result, (list, tuple)) or len(result) != count:
        got = f"{len(result)} items" if isinstance(result, (list, tuple)) else type(result).__name__
        raise Wrong(f"{what}, got {got}. {hint}")
    return result


def _per_rank(result: Any, world_size: int, what: str, hint: str) -> list[list[int]]:
    """Return ``result`` as one list of int indices per rank, or raise Wrong."""
    result = _entries(
        result,
        world_size,
        f"{what} should be a list with one list of indices per rank ({world_size} ranks)",
        hint,
    )
    shards = []
    for rank, shard in enumerate(result):
        if isinstance(shard, torch.Tensor) and shard.dim() <= 1:
            shard = shard.reshape(-1).tolist()
        if not isinstance(shard, (list, tuple)):
            raise Wrong(
                f"{what}, rank {rank}: expected a list of indices, got {type(shard).__name__}. {hint}"
            )
        shards.append([_index(i, f"{what}, rank {rank}", hint) for i in shard])
    return shards


def _check_train(train_orders: Callable[..., Any], n: int, world: int, epochs: int, seed: int) -> None:
    """Raise Wrong when ``train_orders(n, world, epochs, seed)`` differs from the contract."""
    call = f"train_orders({n}, {world}, {epochs}, {seed})"
    result = _entries(
        train_orders(n, world, epochs, seed),
        epochs,
        f"{call} should return one entry per epoch ({epochs})",
        TRAIN_HINT,
    )
    orders = [_per_rank(r, world, f"epoch {e}", TRAIN_HINT) for e, r in enumerate(result)]
    padded = reference_orders(n, world, epochs, seed)
    if orders in (padded, reference_orders(n, world, epochs, seed, drop_last=True)):
        return  # dropping the remainder is a legitimate training choice
    first = orders[0]
    if all(shard == first[0] for shard in first[1:]):
        raise Wrong(
            f"{call}: every rank sees the same indices — build each rank's DistributedSampler "
            f"with num_replicas=world_size and its own rank=r. {TRAIN_HINT}"
        )
    if first in (rank_shards(n, world, shuffle=False), rank_shards(n, world, shuffle=False, drop_last=True)):
        raise Wrong(
            f"{call}: the indices come in dataset order, not shuffled — training uses "
            f"DistributedSampler(..., shuffle=True) (its default). {TRAIN_HINT}"
        )
    if all(epoch == first for epoch in orders[1:]):
        raise Wrong(
            f"{call}: all {epochs} epochs repeat the same order — call sampler.set_epoch(epoch) "
            f"with the epoch number before every epoch (a constant is as good as none). {TRAIN_HINT}"
        )
    for e in range(1, epochs):
        frozen = [r for r in range(world) if orders[e][r] == orders[0][r]]
        if frozen and len(frozen) < world:
            raise Wrong(
                f"{call}: rank {frozen[0]} repeats its epoch-0 order in epoch {e} while other "
                f"ranks move on — call set_epoch(epoch) on every rank's sampler, or the ranks' "
                f"shards overlap. {TRAIN_HINT}"
            )
    if seed != 0 and any(orders[e] == rank_shards(n, world, epoch=e, seed=0) for e in range(epochs)):
        raise Wrong(
            f"{call}: your orders ignore seed={seed} — pass seed=seed to DistributedSampler "
            f"(every rank must use the same seed). {TRAIN_HINT}"
        )
    e, r = next((e, r) for e in range(epochs) for r in range(world) if orders[e][r] != padded[e][r])
    raise Wrong(
        f"{call}: epoch {e}, rank {r} sees {orders[e][r]} but DistributedSampler(range({n}), "
        f"num_replicas={world}, rank={r}, seed={seed}) after set_epoch({e}) yields "
        f"{padded[e][r]}. {TRAIN_HINT}"
    )


def _check_eval(eval_indices: Callable[..., Any], n: int, world: int) -> list[list[int]]:
    """Return the shards of ``eval_indices(n, world)``; raise Wrong unless every sample is
    evaluated exactly once and the ranks' loads differ by at most one."""
    call = f"eval_indices({n}, {world})"
    shards = _per_rank(eval_indices(n, world), world, call, EVAL_HINT)
    counts = collections.Counter(i for shard in shards for i in shard)
    outside = sorted(i for i in counts if not 0 <= i < n)
    if outside:
        raise Wrong(f"{call}: index {outside[0]} is not in range({n}). {EVAL_HINT}")
    repeated = sorted(i for i, c in counts.items() if c > 1)
    missing = sorted(set(range(n)) - set(counts))
    delivered = sum(counts.values())
    if all(sorted(shard) == list(range(n)) for shard in shards):
        raise Wrong(
            f"{call}: every rank evaluates all {n} samples, so each is counted "
            f"{world} times — give each rank its own shard. {EVAL_HINT}"
        )
    if repeated:
        padding = -n % world
        why = (
            f"DistributedSampler pads the shards to equal length by repeating {padding} "
            f"samples, which skews the metric — shard without padding"
            if delivered - n == padding
            else "each sample must be evaluated exactly once"
        )
        raise Wrong(
            f"{call}: {delivered} evaluations for {n} samples, sample {repeated[0]} "
            f"is evaluated {counts[repeated[0]]} times: {why}. {EVAL_HINT}"
        )
    if missing:
        why = (
            f"drop_last=True drops the last {n % world} samples — evaluation must keep them"
            if len(missing) == n % world
            else "every sample must be evaluated once"
        )
        raise Wrong(
            f"{call}: {len(missing)} of {n} samples are never evaluated (e.g. sample "
            f"{missing[0]}): {why}. {EVAL_HINT}"
        )
    sizes = [len(shard) for shard in shards]
    if max(sizes) - min(sizes) > 1:
        raise Wrong(
            f"{call}: the ranks evaluate {sizes} samples — spread them so that ranks "
            f"differ by at most one, or the idle ranks wait for the busy one. {EVAL_HINT}"
        )
    return shards


@checker
def check_ddp_epochs(train_orders: Callable[..., Any], eval_indices: Callable[..., Any] | None = None) -> str:
    """Return a confirmation if ``train_orders(dataset_len, world_size, epochs, seed)`` gives, per
    epoch and rank, DistributedSampler's indices after set_epoch(epoch) (padded or drop_last), and
    ``eval_indices(dataset_len, world_size)`` (when given) evaluates every sample exactly once."""
    for case in TRAIN_CASES:
        _check_train(train_orders, *case)
    train_ok = (
        f"train_orders matches DistributedSampler + set_epoch(epoch) for "
        f"{len(TRAIN_CASES)} setups: a new shuffle every epoch, shared by all ranks"
    )
    if eval_indices is None:
        return train_ok + " (now write eval_indices)"
    shards = [_check_eval(eval_indices, n, world) for n, world in EVAL_CASES]
    n, world = EVAL_CASES[0]
    correct = [i < round(0.3 * n) for i in range(n)]  # the first 30 % predicted right
    ours = sum(correct[i] for i in sum(shards[0], [])) / sum(map(len, shards[0]))
    padded = sum(rank_shards(n, world, shuffle=False), [])
    return (
        f"{train_ok}; eval_indices evaluates every sample exactly once for "
        f"{len(EVAL_CASES)} setups — on {n} samples and {world} ranks your shards give the "
        f"true accuracy {ours:.2f}, a padded sampler would report "
        f"{sum(correct[i] for i in padded) / len(padded):.2f}"
    )
