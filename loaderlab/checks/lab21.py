"""Checker for lab 21: a ``collate_fn`` that skips broken samples. A broken sample is ``None`` (what
a Dataset returns for a file it cannot read); the function must drop the Nones, collate the rest
in their order with ``default_collate``, and return None for a batch with nothing left."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils.data import default_collate

from loaderlab.checks.report import Wrong, checker
from loaderlab.labs.lab21 import SometimesBroken, sample

HINT = "Hint: notebook 21, section '4. A `collate_fn` that skips'."


def batches() -> list[tuple[str, list]]:
    """The batches tried, each with the words that describe it."""
    return [
        ("a batch with no broken sample", [sample(i) for i in range(4)]),
        ("a batch with a broken sample in the middle", [sample(0), None, sample(2), sample(3)]),
        ("a batch whose first sample is broken", [None, sample(5), sample(6)]),
        ("a batch of one readable sample", [None, None, sample(7)]),
        ("a batch where every sample is broken", [None, None, None, None]),
    ]


def _same(result: Any, expected: Any) -> bool:
    try:
        return (
            isinstance(result, (list, tuple))
            and len(result) == 2
            and torch.equal(result[0], expected[0])
            and torch.equal(torch.as_tensor(result[1]), expected[1])
        )
    except (TypeError, RuntimeError):
        return False


def _raised(exc: Exception, what: str, empty: bool) -> Wrong:
    text = f"{type(exc).__name__}: {exc}".splitlines()[0]
    if empty and isinstance(exc, IndexError):
        return Wrong(
            f"on {what} your collate_fn raised {text} (default_collate of an empty list): return "
            f"None when nothing is left, and let the loop skip it. {HINT}"
        )
    if "NoneType" in text:
        return Wrong(
            f"on {what} your collate_fn raised {text}: the broken samples (None) still reach "
            f"default_collate — drop every sample that `is None` first. {HINT}"
        )
    return Wrong(f"on {what} your collate_fn raised {text}. {HINT}")


def _diagnose(result: Any, batch: list, what: str) -> None:
    """Raise Wrong with one sentence when ``result`` is not the right answer for ``batch``."""
    good = [s for s in batch if s is not None]
    if not good:
        if result is not None:
            raise Wrong(
                f"on {what} your collate_fn returned {type(result).__name__} {result!r:.40}: return "
                f"None, which the loop skips (anything else reaches the model). {HINT}"
            )
        return
    if result is None:
        raise Wrong(
            f"on {what} your collate_fn returned None, but {len(good)} of its {len(batch)} samples "
            f"are readable: only a batch with nothing left may be None. {HINT}"
        )
    expected = default_collate(good)
    if _same(result, expected):
        return
    if (
        isinstance(result, list)
        and len(result) in (len(good), len(batch))
        and all(s is None or isinstance(s, tuple) for s in result)
    ):
        raise Wrong(
            f"on {what} your collate_fn returned a list of {len(result)} samples, not a batch: pass "
            f"the readable samples to default_collate. {HINT}"
        )
    sequence = isinstance(result, (list, tuple)) and len(result) > 0
    images = result[0] if sequence and torch.is_tensor(result[0]) else None
    if images is None:
        raise Wrong(
            f"on {what} your collate_fn returned {type(result).__name__}, not what default_collate "
            f"makes of the readable samples (a list [images, labels]). {HINT}"
        )
    if len(images) == len(batch) != len(good):
        raise Wrong(
            f"on {what} your batch holds {len(images)} images where only {len(good)} samples are "
            f"readable: drop the broken ones, do not fill them in. {HINT}"
        )
    if len(images) != len(good):
        raise Wrong(
            f"on {what} your batch holds {len(images)} images, but {len(good)} samples are readable: "
            f"keep every sample that is not None. {HINT}"
        )
    raise Wrong(
        f"on {what} your batch holds the right number of images but not the readable samples in "
        f"the order they came: keep them as they are, in order. {HINT}"
    )


@checker
def check_skip_broken_collate(
    skip_broken_collate: Callable[[list], Any], run_epoch: Callable[..., list] | None = None
) -> str:
    """Return a confirmation if ``skip_broken_collate(batch)`` drops the Nones, collates the rest
    with default_collate, and returns None for a batch with nothing left; with ``run_epoch(dataset,
    collate_fn)`` (the lab's loop, returning the sizes of the batches it trained on) also that the
    loop skips the empty batch."""
    for what, batch in batches():
        given = list(batch)
        try:
            result = skip_broken_collate(given)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise _raised(exc, what, empty=all(s is None for s in batch)) from None
        _diagnose(result, batch, what)
    verdict = f"broken samples dropped, order kept and an empty batch gives None on {len(batches())} batches"
    if run_epoch is None:
        return verdict
    dataset = SometimesBroken()
    expected = [
        n
        for n in (
            sum(i not in dataset.broken for i in range(k, min(k + 8, len(dataset))))
            for k in range(0, len(dataset), 8)
        )
        if n
    ]
    try:
        sizes = list(run_epoch(dataset, skip_broken_collate))
    except NotImplementedError:
        raise
    except Exception as exc:
        raise Wrong(
            f"run_epoch(dataset, skip_broken_collate) raised {type(exc).__name__}: {exc} — skip a "
            f"batch that is None before the training step. {HINT}"
        ) from None
    if sizes != expected:
        raise Wrong(
            f"your loop trained on batches of {sizes}, expected {expected} (batch_size=8, no "
            f"shuffle, the empty batch skipped). {HINT}"
        )
    return (
        f"{verdict}; your loop trained on batches of {sizes}: {sum(sizes)} of {len(dataset)} samples, "
        f"{len(dataset) // 8 - len(sizes)} empty batch skipped"
    )
