"""Checker for lab 09: per-sample weights that make ``WeightedRandomSampler`` draw every class
equally often. Exact: class ``c`` is drawn with probability (sum of its weights) / (sum of all
weights) (``torch.multinomial`` in ``WeightedRandomSampler.__iter__``), so no draws are counted."""

from __future__ import annotations

import collections
import math
import random
from collections.abc import Callable
from typing import Any

import torch
from torch.utils.data import DataLoader

from loaderlab.checks.report import Wrong, checker
from loaderlab.sampling import expected_class_fractions

HINT = "Hint: notebook 09, section '3. Weights that do balance: inverse class frequency'."
REL_TOL = 1e-6


def label_sets() -> list[list[int]]:
    """Return the label lists tried: 90/10, three classes with a single-sample class, and four
    classes in shuffled order (class ids ``0 .. C-1``, all present)."""
    three, four = [0] * 12 + [1] * 5 + [2], [0] * 20 + [1] * 7 + [2] * 3 + [3]
    for labels in (three, four):
        random.Random(len(labels)).shuffle(labels)
    return [[0] * 90 + [1] * 10, three, four]


def _as_weights(result: Any, n: int) -> list[float]:
    """Return the candidate's result as floats, the way WeightedRandomSampler reads it."""
    try:
        tensor = torch.as_tensor(result, dtype=torch.double)
    except (TypeError, ValueError, RuntimeError):
        tensor = None
    if tensor is not None and tensor.dim() == 1 and len(tensor) == n:
        return tensor.tolist()
    why = (
        f"{type(result).__name__}, not a list of numbers: return one float per sample"
        if tensor is None
        else f"an array of shape {tuple(tensor.shape)}: return a flat list with one weight per sample"
        if tensor.dim() != 1
        else f"{len(tensor)} weights for {n} labels: WeightedRandomSampler needs "
        f"one weight per sample, not one per class"
    )
    raise Wrong(f"class_balanced_weights returned {why}. {HINT}")


def _diagnose(weights: list[float], labels: list[int]) -> None:
    """Raise Wrong with the reason when ``weights`` do not balance the classes of ``labels``."""
    counts, pairs = collections.Counter(labels), list(zip(weights, labels, strict=True))
    for i, (weight, label) in enumerate(pairs):
        if not math.isfinite(weight) or weight < 0:
            why = (
                f"weight {weight}: every weight must be a finite number"
                if not math.isfinite(weight)
                else f"the negative weight {weight:g}: weights are relative probabilities and must be"
            )
            raise Wrong(f"sample {i} (class {label}) has {why} > 0. {HINT}")
    zero = sorted({label for weight, label in pairs if weight == 0})
    if zero:
        integer_division = all(counts[c] > 1 for c in zero) and all(
            w == 1 for w, y in pairs if counts[y] == 1
        )
        why = (
            " — 1 // count is integer division and gives 0 for every class with more than "
            "one sample: use 1 / count"
            if integer_division
            else ""
        )
        raise Wrong(
            f"class {zero[0]} has weight 0, so the sampler would never draw class {zero[0]}{why}. {HINT}"
        )
    probabilities = expected_class_fractions(weights, labels)
    target = 1 / len(counts)
    if all(math.isclose(p, target, rel_tol=REL_TOL) for p in probabilities.values()):
        return
    per_count = [w / counts[y] for w, y in pairs]
    if len(counts) > 1 and all(math.isclose(r, per_count[0], rel_tol=REL_TOL) for r in per_count):
        raise Wrong(
            "your weights grow with the class frequency, so the large class is drawn even more "
            f"often: use the inverse, 1 / (number of samples of the class). {HINT}"
        )
    shown = ", ".join(f"class {c}: {p:.2f}" for c, p in probabilities.items())
    raise Wrong(
        f"with labels of class sizes {dict(sorted(counts.items()))} your weights draw {shown} "
        f"instead of {target:.2f} each: the weights of each class must add up to the same total. "
        f"{HINT}"
    )


@checker
def check_balanced_weights(
    class_balanced_weights: Callable[[list[int]], Any], make_loader: Callable[..., Any] | None = None
) -> str:
    """Return a confirmation if ``class_balanced_weights(labels)`` (one number per sample, as a
    list, array or 1-D tensor) balances every label set; with ``make_loader(labels, weights)``
    (the lab's loader, batches starting with the labels) also the class shares it drew."""
    for labels in label_sets():
        given = list(labels)
        weights = _as_weights(class_balanced_weights(given), len(labels))
        if given != labels:
            raise Wrong(
                "your function changed the labels list it was given (sorted it?), so its weights "
                f"no longer line up with the samples: work on a copy. {HINT}"
            )
        _diagnose(weights, labels)
    verdict = (
        f"every class is drawn with equal probability on {len(label_sets())} label sets "
        f"(2 to 4 classes, one with a single sample)"
    )
    if make_loader is None:
        return verdict
    try:
        loader = make_loader(list(labels), list(weights))
        drawn = torch.cat(
            [torch.as_tensor(b[0] if isinstance(b, (list, tuple)) else b).reshape(-1) for b in loader]
        )
    except Exception as exc:  # the lab's own code: answer with one sentence
        raise Wrong(
            f"make_loader(labels, weights) failed with {type(exc).__name__}: {exc} — it should "
            f"return a DataLoader whose batches start with the labels. {HINT}"
        ) from None
    if not isinstance(loader, DataLoader) or drawn.numel() == 0:
        raise Wrong(
            f"make_loader(labels, weights) returned {type(loader).__name__} that yielded "
            f"{drawn.numel()} labels: return a DataLoader that draws through a "
            f"WeightedRandomSampler. {HINT}"
        )
    shares = [round(float((drawn == c).float().mean()), 2) for c in sorted(set(labels))]
    return (
        f"{verdict}; your loader drew class shares {shares} for class sizes "
        f"{[n for _, n in sorted(collections.Counter(labels).items())]}"
    )
