"""Checkers for lab 05: ``check_pad_collate`` runs a padding ``collate_fn`` in a DataLoader (0 and 2
workers) over hand-made batches and compares it with the answer key ``expected_pad``;
``check_bucket_batches`` checks a length-bucketing batch plan: a partition per epoch, padding waste
under 15 %, reproducible per (epoch, seed), not sorted by length."""

from __future__ import annotations

import collections
import operator
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils.data import DataLoader

from loaderlab.checks.report import Wrong, checker
from loaderlab.collate import padding_waste
from loaderlab.data import make_token_sequences
from loaderlab.env import can_fork
from loaderlab.measure import collect_batches

PAD_HINT = "Hint: notebook 05, section 2 '`pad_collate`: padded ids, an attention mask, labels'."
BUCKET_HINT = "Hint: notebook 05, section 4 'Padding waste, and length bucketing'."
WORKER_TIMEOUT_S = 10.0
MAX_WASTE = 0.15
BUCKET_BATCH_SIZE = 32
BUCKET_N = 2003  # not a multiple of 32: the last batch is short


def pad_check_samples() -> list[tuple[torch.Tensor, int]]:
    """Return 12 ``(tokens, label)`` samples, in batches of 4: real 0 tokens, the longest sequence
    never first, widths 3, 9 and 7 (so value-based masks and fixed widths are caught)."""
    rows = [
        ([3, 1], 1),
        ([4, 0, 2], 0),
        ([5], 1),
        ([7, 8], 0),  # widest 3, a 0 inside
        ([1, 2, 3, 4], 2),
        ([6, 5, 0, 0, 2, 9, 4, 1, 3], 1),
        ([0], 0),
        ([8, 8, 0], 2),  # widest 9
        ([2, 2, 2, 2, 2], 0),
        ([9], 1),
        ([3, 0, 4, 5, 0, 0], 1),
        ([1, 1, 1, 1, 1, 1, 7], 2),  # 7
    ]
    return [(torch.tensor(tokens, dtype=torch.long), label) for tokens, label in rows]


def expected_pad(samples: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The answer key: ``(padded [B, T], padding_mask [B, T], labels [B])``, each row its tokens then
    0s, padding_mask True at padding (after its first ``L_i`` positions), as ``key_padding_mask`` of
    ``nn.MultiheadAttention`` takes it."""
    width = max(len(tokens) for tokens, _ in samples)
    padded = torch.zeros(len(samples), width, dtype=torch.long)
    padding_mask = torch.ones(len(samples), width, dtype=torch.bool)
    for row, (tokens, _) in enumerate(samples):
        padded[row, : len(tokens)] = tokens
        padding_mask[row, : len(tokens)] = False
    return padded, padding_mask, torch.tensor([label for _, label in samples], dtype=torch.long)


def _diagnose_pad(out: Any, samples: list[tuple[torch.Tensor, int]], where: str) -> None:
    """Raise Wrong with the first way ``out`` differs from the answer key for ``samples``."""

    def wrong(text: str) -> Wrong:
        return Wrong(f"{where} {text} {PAD_HINT}")

    ref_padded, ref_pad_mask, ref_labels = expected_pad(samples)
    ref_mask = ~ref_pad_mask  # True at real tokens
    width = ref_padded.shape[1]
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        kind = f"a {len(out)}-tuple" if isinstance(out, (tuple, list)) else f"a {type(out).__name__}"
        raise wrong(f"pad_collate returned {kind}; return three things: (padded, padding_mask, labels).")
    padded, mask, labels = out
    if not isinstance(labels, torch.Tensor):
        raise wrong(
            f"labels come back as a {type(labels).__name__}, not a tensor: return "
            f"torch.tensor(labels, dtype=torch.long) so a loss can use them."
        )
    if labels.dtype != torch.long or labels.shape != ref_labels.shape:
        raise wrong(
            f"labels are {labels.dtype} of shape {tuple(labels.shape)}, expected "
            f"torch.int64 of shape {tuple(ref_labels.shape)}."
        )
    if not isinstance(padded, torch.Tensor):
        raise wrong(f"padded is a {type(padded).__name__}, not a tensor [B, T].")
    if padded.dtype != torch.long:
        raise wrong(
            f"padded has dtype {padded.dtype}: token ids must stay torch.int64 "
            f"(an embedding layer rejects floats)."
        )
    if padded.shape != ref_padded.shape:
        if padded.shape == ref_padded.shape[::-1]:
            raise wrong(
                f"padded has shape {tuple(padded.shape)}, i.e. [T, B]: pad with "
                f"batch_first=True to get [B, T]."
            )
        if padded.dim() == 2 and padded.shape[0] == len(samples) and padded.shape[1] > width:
            raise wrong(
                f"padded is {padded.shape[1]} tokens wide but the batch's longest sequence "
                f"has {width}: pad to the longest sequence of each batch, not to a fixed length."
            )
        raise wrong(
            f"padded has shape {tuple(padded.shape)}, expected {tuple(ref_padded.shape)} "
            f"(batch size, longest sequence)."
        )
    if not torch.equal(padded, ref_padded):
        left = torch.stack(
            [torch.cat([tokens.new_zeros(width - len(tokens)), tokens]) for tokens, _ in samples]
        )
        if torch.equal(padded, left):
            raise wrong(
                "the padding comes before the tokens (left padding): put it after them, as pad_sequence does."
            )
        if torch.equal(padded[ref_mask], ref_padded[ref_mask]):
            values = sorted(set(padded[~ref_mask].tolist()))
            raise wrong(
                f"pad positions hold {values[:3]} instead of 0: use padding_value=0 "
                f"(token id 0 is reserved for padding)."
            )
        raise wrong("padded does not hold each sequence's tokens at the start of its row followed by 0s.")
    if not isinstance(mask, torch.Tensor) or mask.shape != ref_pad_mask.shape:
        shape = tuple(mask.shape) if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise wrong(
            f"padding_mask is {shape}, expected a tensor of shape {tuple(ref_pad_mask.shape)} like padded."
        )
    if mask.dtype != torch.bool:
        raise wrong(
            f"padding_mask has dtype {mask.dtype}: use torch.bool, as nn.MultiheadAttention's "
            f"key_padding_mask (a float mask is added to the attention scores)."
        )
    if torch.equal(mask, ref_mask):
        raise wrong(
            "padding_mask is inverted: PyTorch's key_padding_mask is True at padding and False "
            "at real tokens (Hugging Face's attention_mask is the opposite)."
        )
    if torch.equal(mask, ref_padded == 0) and not torch.equal(mask, ref_pad_mask):
        raise wrong(
            "padding_mask is computed from token values (tokens == 0), but a real token can be "
            "0: build it from the sequence lengths."
        )
    if not torch.equal(mask, ref_pad_mask):
        raise wrong(
            f"padding_mask is wrong at {int((mask != ref_pad_mask).sum())} positions: True "
            f"exactly after the first L_i positions of row i."
        )
    if not torch.equal(labels, ref_labels):
        raise wrong(
            f"labels {labels.tolist()} do not match the samples' labels {ref_labels.tolist()} in batch order."
        )


@checker
def check_pad_collate(pad_collate: Callable[[list], Any]) -> str:
    """Check ``pad_collate`` as the collate_fn of a DataLoader over hand-made token batches."""
    samples = pad_check_samples()  # a list is a map-style Dataset: the check is about the collate_fn
    batches = [samples[i : i + 4] for i in range(0, len(samples), 4)]
    # A collate_fn defined in a notebook lives in __main__, which spawned workers cannot import.
    setups: list[tuple[dict[str, Any], str]] = [({}, "In batch {k},")]
    if can_fork():
        setups.append(
            (
                dict(num_workers=2, multiprocessing_context="fork", timeout=WORKER_TIMEOUT_S),
                "With 2 workers, in batch {k},",
            )
        )
    for options, where in setups:
        outputs = collect_batches(DataLoader(samples, batch_size=4, collate_fn=pad_collate, **options))
        if len(outputs) != len(batches):
            raise Wrong(f"the loader yielded {len(outputs)} batches instead of {len(batches)}. {PAD_HINT}")
        for k, (out, batch) in enumerate(zip(outputs, batches, strict=True)):
            _diagnose_pad(out, batch, where.format(k=k))
    if not can_fork():
        return "pads, masks and labels every batch exactly (workers not checked: no fork here)"
    return (
        "pads to each batch's longest sequence with 0s, padding_mask True exactly at padding, "
        "LongTensor labels, with 0 and 2 workers"
    )


def bucket_check_lengths(n: int = BUCKET_N, seed: int = 1) -> list[int]:
    """Return the lengths of ``make_token_sequences(n, seed=seed)`` (lognormal, median 40, ≤ 512)."""
    return [len(tokens) for tokens, _ in make_token_sequences(n=n, seed=seed)]


def _batches(result: Any, call: str) -> list[list[int]]:
    if not isinstance(result, Sequence) or isinstance(result, (str, bytes)):
        raise Wrong(
            f"{call} returned a {type(result).__name__}, not a list of batches "
            f"(lists of indices). {BUCKET_HINT}"
        )
    batches = []
    for k, batch in enumerate(result):
        try:
            batches.append([operator.index(i) for i in batch])
        except TypeError:
            raise Wrong(
                f"{call}: batch {k} is not a list of int indices ({batch!r:.40}). {BUCKET_HINT}"
            ) from None
    return batches


def _partition(result: Any, n: int, batch_size: int, call: str) -> list[list[int]]:
    """Return ``result`` as lists of int indices, or raise Wrong unless it holds every index of
    ``range(n)`` once in non-empty batches of at most ``batch_size``."""
    batches = _batches(result, call)
    if any(not batch for batch in batches):
        raise Wrong(f"{call} contains an empty batch. {BUCKET_HINT}")
    biggest = max((len(b) for b in batches), default=0)
    if biggest > batch_size:
        raise Wrong(
            f"{call} has a batch of {biggest} indices, more than batch_size={batch_size}. {BUCKET_HINT}"
        )
    counts = collections.Counter(i for batch in batches for i in batch)
    outside = sorted(i for i in counts if not 0 <= i < n)
    if outside:
        raise Wrong(f"{call} holds index {outside[0]}, outside 0..{n - 1}. {BUCKET_HINT}")
    repeated = sorted(i for i, c in counts.items() if c > 1)
    if repeated:
        raise Wrong(
            f"{call} holds {len(repeated)} indices more than once (index {repeated[0]} "
            f"{counts[repeated[0]]} times): every index exactly once per epoch. {BUCKET_HINT}"
        )
    if n - len(counts):
        raise Wrong(
            f"{call} leaves out {n - len(counts)} of {n} indices (a dropped remainder?): every "
            f"index exactly once per epoch, the last batch may be smaller. {BUCKET_HINT}"
        )
    return batches


@checker
def check_bucket_batches(bucket_batches: Callable[[list[int], int, int, int], Any]) -> str:
    """Check ``bucket_batches(lengths, batch_size, epoch, seed)``: a partition into batches per
    epoch, low padding waste, reproducible per (epoch, seed), changing across epochs."""
    small = [3, 9, 1, 4, 4, 7, 2, 8, 5, 6, 10, 2, 3]  # every index once, remainder kept, size limit
    for epoch in (0, 1):
        call = f"bucket_batches(13 lengths, batch_size=5, epoch={epoch}, seed=0)"
        _partition(bucket_batches(list(small), 5, epoch, 0), 13, 5, call)
    lengths = bucket_check_lengths()
    n, size = len(lengths), BUCKET_BATCH_SIZE
    runs: dict[tuple[int, int], list[list[int]]] = {}
    for epoch, seed in ((0, 0), (1, 0), (0, 1)):
        call = f"bucket_batches({n} lengths, batch_size={size}, epoch={epoch}, seed={seed})"
        drawn = bucket_batches(list(lengths), size, epoch, seed)
        runs[epoch, seed] = batches = _partition(drawn, n, size, call)
        waste = padding_waste(batches, lengths)
        if waste >= MAX_WASTE:
            raise Wrong(
                f"{call} pads {waste:.0%} of all tokens, the limit is {MAX_WASTE:.0%}: put "
                f"sequences of similar length in the same batch. {BUCKET_HINT}"
            )
        widths = [max(lengths[i] for i in batch) for batch in batches]
        if widths in (sorted(widths), sorted(widths, reverse=True)):
            raise Wrong(
                f"{call} yields its batches sorted by length, so every epoch starts with the "
                f"shortest sequences: shuffle the order of the batches. {BUCKET_HINT}"
            )
    if _batches(bucket_batches(list(lengths), size, 0, 0), "the second call") != runs[0, 0]:
        raise Wrong(
            "two calls with the same epoch and seed gave different batches: draw the randomness "
            f"from a generator seeded with seed and epoch, not a global one. {BUCKET_HINT}"
        )
    if runs[1, 0] == runs[0, 0]:
        raise Wrong(
            "epoch 0 and epoch 1 give identical batches, so the model sees the same batches "
            f"every epoch: mix the epoch into the seed. {BUCKET_HINT}"
        )
    if runs[0, 1] == runs[0, 0]:
        raise Wrong(f"seed 0 and seed 1 give identical batches: the seed is ignored. {BUCKET_HINT}")
    waste = padding_waste(runs[0, 0], lengths)
    return (
        f"every index once per epoch, at most {size} per batch, {waste:.1%} padding "
        f"(limit {MAX_WASTE:.0%}), new batches each epoch, reproducible per (epoch, seed)"
    )
