"""Checker for lab 01: a Dataset + DataLoader that yields exactly the batches of a hand-written loop.

``check_loop_to_loader(make_loader)`` compares the batches of ``make_loader(features, labels,
sampler, batch_size)`` tensor by tensor with the loop's (``manual_batches``) for several batch
sizes, then with the loader rebuilt with 2 workers (forked when the Dataset lives in the notebook).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import torch
from torch.utils.data import DataLoader, Sampler

from loaderlab._validate import require_positive
from loaderlab.checks.report import Wrong, checker
from loaderlab.env import worker_start_method
from loaderlab.loaders import rebuild, same_batch
from loaderlab.measure import collect_batches

HINT = "Hint: notebook 01, section 3 'The same batches from a DataLoader'."
N_SAMPLES = 50
DIM = 4
# 50 samples: 10 divides them, 8 leaves a last batch of 2, 64 holds them all in one batch.
BATCH_SIZES = (10, 8, 64)
WORKER_TIMEOUT_S = 30.0  # per batch; spawned workers import torch before their first batch


class FixedOrderSampler(Sampler[int]):
    """Yields the same given order of indices on every epoch (a shuffled order fixed in advance)."""

    def __init__(self, order: Sequence[int]) -> None:
        if not len(order):
            raise ValueError("order must list at least one index")
        self.order = [int(i) for i in order]

    def __iter__(self) -> Iterator[int]:
        return iter(self.order)

    def __len__(self) -> int:
        return len(self.order)


def loop_data(n: int = N_SAMPLES, dim: int = DIM, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Return ``(features: FloatTensor[n, dim], labels: LongTensor[n])``; column 0 of the
    features holds the sample's own index, so every row can be traced back to its sample."""
    require_positive(n, "n")
    require_positive(dim, "dim")
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(n, dim, generator=generator)
    features[:, 0] = torch.arange(n, dtype=torch.float32)
    return features, torch.randint(0, 3, (n,), generator=generator)


def shuffled_sampler(n: int, seed: int) -> FixedOrderSampler:
    """Return a sampler that yields one fixed permutation of ``range(n)`` (drawn from ``seed``)."""
    require_positive(n, "n")
    return FixedOrderSampler(torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist())


def manual_batches(
    features: torch.Tensor, labels: torch.Tensor, order: Sequence[int], batch_size: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Return the hand-written loop's batches: ``order`` cut into slices of ``batch_size``
    (the last one shorter), each as ``(stacked features, stacked labels)``."""
    require_positive(batch_size, "batch_size")
    if len(features) != len(labels):
        raise ValueError(f"features has {len(features)} rows but labels has {len(labels)}")
    chunks = [list(order[start : start + batch_size]) for start in range(0, len(order), batch_size)]
    return [
        (torch.stack([features[i] for i in chunk]), torch.stack([labels[i] for i in chunk]))
        for chunk in chunks
    ]


def _diagnose(
    loader: DataLoader, expected: list[tuple[torch.Tensor, torch.Tensor]], batch_size: int, where: str
) -> None:
    """Raise Wrong with the first difference between the batches of ``loader`` and the loop's."""
    batches = collect_batches(loader)
    for k, batch in enumerate(batches):
        if not isinstance(batch, (list, tuple)) or len(batch) != 2:
            raise Wrong(
                f"{where} batch {k} is a {type(batch).__name__}, not a (features, labels) "
                f"pair: __getitem__ must return (features[i], labels[i]). {HINT}"
            )
        x, y = batch
        if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
            raise Wrong(
                f"{where} batch {k} holds {type(x).__name__} and {type(y).__name__}, not two "
                f"tensors: keep the default collate_fn, which stacks the samples. {HINT}"
            )
        if x.dim() == 1 and y.dim() == 2:
            raise Wrong(
                f"{where} each batch comes as (labels, features), swapped: __getitem__ must "
                f"return (features[i], labels[i]) in that order. {HINT}"
            )
        if x.dim() != 2 or x.shape[1] != DIM or y.dim() != 1:
            raise Wrong(
                f"{where} batch {k} has shapes {tuple(x.shape)} and {tuple(y.shape)}, "
                f"expected [B, {DIM}] and [B]: return one row features[i] and one label "
                f"labels[i] per sample. {HINT}"
            )
        if x.dtype != torch.float32:
            raise Wrong(
                f"{where} features come out as {x.dtype}, expected torch.float32 like the "
                f"features you were given: do not convert them. {HINT}"
            )
        if y.dtype != torch.int64:
            raise Wrong(
                f"{where} labels come out as {y.dtype}, expected torch.int64 like the labels "
                f"you were given: return labels[i] (or int(labels[i])) unchanged. {HINT}"
            )
    sizes = [len(x) for x, _ in batches]
    wanted = [len(x) for x, _ in expected]
    if sizes != wanted:
        if sizes == wanted[:-1] and wanted[-1] < batch_size:
            raise Wrong(
                f"{where} the last, incomplete batch ({wanted[-1]} samples) is missing: "
                f"the hand-written loop keeps it, so keep drop_last=False. "
                f"Hint: notebook 02, section 4 on drop_last."
            )
        if len(set(sizes[:-1] or sizes)) == 1 and sizes[0] != batch_size and sizes[0] != wanted[0]:
            raise Wrong(
                f"{where} asked for batch_size={batch_size} but your batches hold "
                f"{sizes[0]} samples: pass batch_size on to the DataLoader. {HINT}"
            )
        raise Wrong(
            f"{where} your loader yields {len(sizes)} batches of sizes {sizes[:6]}, the loop "
            f"yields {len(wanted)} of sizes {wanted[:6]}. {HINT}"
        )
    got = torch.cat([x[:, 0] for x, _ in batches]).long().tolist()
    want = torch.cat([x[:, 0] for x, _ in expected]).long().tolist()
    if got != want:
        # the indices the loader asks its dataset for (one more draw of its sampler)
        sampler = loader.batch_sampler if loader.batch_sampler is not None else [[i] for i in loader.sampler]
        if sorted(got) == sorted(want) and [int(i) for batch in sampler for i in batch] != want:
            raise Wrong(
                f"{where} your batches hold the right samples but in another order: follow "
                f"the sampler you are given (sampler=sampler, not shuffle=True). {HINT}"
            )
        raise Wrong(
            f"{where} your batches hold other samples than the sampler's indices: "
            f"__getitem__(i) must return sample i. {HINT}"
        )
    for k, (batch, reference) in enumerate(zip(batches, expected, strict=True)):
        if not same_batch(tuple(batch), reference):
            raise Wrong(
                f"{where} batch {k} differs from the loop's batch: the features or labels of "
                f"a sample are not features[i] and labels[i]. {HINT}"
            )


@checker
def check_loop_to_loader(make_loader: Callable[..., DataLoader]) -> str:
    """Check that ``make_loader(features, labels, sampler, batch_size)`` returns a DataLoader
    whose batches equal the hand-written loop's, for several batch sizes, with 0 and 2 workers."""
    features, labels = loop_data()
    for seed, batch_size in [*enumerate(BATCH_SIZES), (1, 8)]:  # the last loader is rebuilt with workers
        sampler = shuffled_sampler(N_SAMPLES, seed)
        loader = make_loader(features, labels, sampler, batch_size)
        if not isinstance(loader, DataLoader):
            raise Wrong(
                f"make_loader returned a {type(loader).__name__}, not a torch.utils.data.DataLoader. {HINT}"
            )
        _diagnose(
            loader,
            manual_batches(features, labels, sampler.order, batch_size),
            batch_size,
            f"With batch_size={batch_size},",
        )
    method = worker_start_method(loader.dataset)
    if method is None:
        return (
            f"same batches as the hand-written loop for batch sizes {BATCH_SIZES} (workers not "
            "checked: your Dataset class is defined in the notebook and this platform cannot fork)"
        )
    with_workers = rebuild(
        loader,
        num_workers=2,
        multiprocessing_context=method,
        timeout=WORKER_TIMEOUT_S,
        persistent_workers=False,
        prefetch_factor=2,
    )
    _diagnose(
        with_workers,
        manual_batches(features, labels, sampler.order, 8),
        8,
        "With batch_size=8 and num_workers=2,",
    )
    return (
        f"same batches as the hand-written loop, tensor by tensor, for batch sizes "
        f"{', '.join(map(str, BATCH_SIZES))} and with 2 workers"
    )
