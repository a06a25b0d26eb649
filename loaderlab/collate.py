"""Collating variable-length token sequences: padding, masks, padding waste, length bucketing."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import Sampler

from loaderlab.datasets import TokenDataset
from loaderlab.loaders import require_positive

PAD_ID = 0


def _check_tokens(tokens: Any, where: str) -> torch.Tensor:
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1:
        raise TypeError(f"{where} must be a 1-D LongTensor of token ids, got {tokens!r:.60}")
    if tokens.dtype != torch.long:
        raise TypeError(f"{where} must have dtype torch.long, got {tokens.dtype}")
    return tokens


def pad_collate(
    batch: Sequence[tuple[torch.Tensor, int]],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Return ``(padded, mask, labels)`` for a list of ``(tokens: LongTensor[L_i], label: int)``.

    ``padded`` is a LongTensor ``[B, T]`` with ``T = max L_i`` filled with ``PAD_ID`` (0) after
    each sequence; ``mask`` is bool ``[B, T]``, True at real tokens; ``labels`` is
    LongTensor ``[B]``. ``T`` depends on the batch, which is why padding belongs here and
    not in ``Dataset.__getitem__`` (a sample does not know its batch-mates).
    """
    if not isinstance(batch, Sequence) or not batch:
        raise ValueError("batch must be a non-empty list of (tokens, label) samples")
    sequences = []
    labels = []
    for i, sample in enumerate(batch):
        if not isinstance(sample, (tuple, list)) or len(sample) != 2:
            kind = type(sample).__name__
            raise TypeError(f"batch[{i}] must be a (tokens, label) pair, got {kind}")
        sequences.append(_check_tokens(sample[0], f"batch[{i}][0]"))
        labels.append(int(sample[1]))
    padded = pad_sequence(sequences, batch_first=True, padding_value=PAD_ID)
    lengths = torch.tensor([len(s) for s in sequences])
    mask = torch.arange(padded.shape[1]) < lengths[:, None]
    return padded, mask, torch.tensor(labels, dtype=torch.long)


def pad_dict_collate(batch: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
    """Return ``{"input_ids": [B, T], "attention_mask": [B, T], "labels": [B]}`` for a list of
    dict samples ``{"input_ids": LongTensor[L_i], "label": int}`` (same padding as
    ``pad_collate``; the key names follow Hugging Face ``transformers``)."""
    if not isinstance(batch, Sequence) or not batch:
        raise ValueError("batch must be a non-empty list of dict samples")
    for i, sample in enumerate(batch):
        if not isinstance(sample, Mapping) or not {"input_ids", "label"} <= sample.keys():
            raise TypeError(f"batch[{i}] must be a dict with keys 'input_ids' and 'label'")
    padded, mask, labels = pad_collate([(s["input_ids"], s["label"]) for s in batch])
    return {"input_ids": padded, "attention_mask": mask, "labels": labels}


class DictTokenDataset(TokenDataset):
    """Token sequences as dict samples: returns ``{"input_ids": LongTensor[L_i], "label": int}``."""

    def __getitem__(self, index: int) -> dict[str, Any]:  # type: ignore[override]
        tokens, label = self.samples[index]
        return {"input_ids": tokens, "label": label}


def padding_waste(batches: Iterable[Sequence[int]], lengths: Sequence[int]) -> float:
    """Return the fraction (0–1) of pad tokens when each batch of indices is padded to its
    longest sequence: ``sum(B_b * T_b - sum L_i) / sum(B_b * T_b)``.

    ``batches`` yields lists of dataset indices (e.g. a ``BatchSampler``); ``lengths[i]`` is
    the length of sample ``i``.
    """
    if isinstance(lengths, torch.Tensor):
        lengths = lengths.tolist()
    if not isinstance(lengths, Sequence) or not lengths:
        raise ValueError("lengths must be a non-empty sequence of sequence lengths")
    padded_total = 0
    real_total = 0
    for batch in batches:
        if not len(batch):
            raise ValueError("batches must not contain an empty batch")
        batch_lengths = [lengths[i] for i in batch]
        if min(batch_lengths) < 0:
            raise ValueError("lengths must be >= 0")
        padded_total += len(batch_lengths) * max(batch_lengths)
        real_total += sum(batch_lengths)
    if padded_total == 0:
        raise ValueError("batches is empty (or all sequences have length 0): no tokens to count")
    return (padded_total - real_total) / padded_total


class BucketBatchSampler(Sampler[list[int]]):
    """Yields batches of indices of similar length, in a new random order every epoch.

    Per epoch: shuffle all indices with a generator seeded by ``seed + epoch``, cut them into
    pools of ``batch_size * pool_batches``, sort each pool by length, cut the pool into
    batches, and shuffle the order of all batches. Every index appears exactly once per epoch
    (the last batch of a pool may be shorter unless ``drop_last``). Call ``set_epoch(epoch)``
    before each epoch, as with ``DistributedSampler``, or every epoch repeats the same batches.
    Pass it as ``DataLoader(dataset, batch_sampler=sampler, collate_fn=pad_collate)``.
    """

    def __init__(
        self,
        lengths: Sequence[int],
        batch_size: int,
        pool_batches: int = 50,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if isinstance(lengths, torch.Tensor):
            lengths = lengths.tolist()
        if not isinstance(lengths, Sequence) or not lengths:
            raise ValueError("lengths must be a non-empty sequence of sequence lengths")
        require_positive(batch_size, "batch_size")
        require_positive(pool_batches, "pool_batches")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        if not isinstance(drop_last, bool):
            raise TypeError(f"drop_last must be a bool, got {type(drop_last).__name__}")
        self.lengths = torch.as_tensor(list(lengths), dtype=torch.long)
        self.batch_size, self.pool_batches = batch_size, pool_batches
        self.seed, self.drop_last = seed, drop_last
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose order ``__iter__`` yields next."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"epoch must be an int >= 0, got {epoch!r}")
        self.epoch = epoch

    def _batches(self) -> list[list[int]]:
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.lengths), generator=generator)
        pool_size = self.batch_size * self.pool_batches
        batches: list[list[int]] = []
        for start in range(0, len(order), pool_size):
            pool = order[start : start + pool_size]
            # stable sort keeps the shuffled order among equal lengths
            pool = pool[torch.sort(self.lengths[pool], stable=True).indices]
            for b in range(0, len(pool), self.batch_size):
                batch = pool[b : b + self.batch_size].tolist()
                if len(batch) == self.batch_size or not self.drop_last:
                    batches.append(batch)
        shuffled = torch.randperm(len(batches), generator=generator).tolist()
        return [batches[i] for i in shuffled]

    def __iter__(self) -> Iterator[list[int]]:
        yield from self._batches()

    def __len__(self) -> int:
        n, pool_size = len(self.lengths), self.batch_size * self.pool_batches
        full_pools, rest = divmod(n, pool_size)
        per_pool = self.pool_batches
        if self.drop_last:
            return full_pools * per_pool + rest // self.batch_size
        return full_pools * per_pool + -(-rest // self.batch_size)
