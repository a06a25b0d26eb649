"""The synthetic data makers: a temporary ``workspace`` (01, 03, 04, 08, 10, 14, 16), JPEG/PNG
image folders (01, 03, 04, 16), token sequences (05, the lab 05 checker), imbalanced labels (09)
and metadata tables as a list of str or one bytes array (06, 12). Same seed, same data.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from loaderlab._validate import require_positive


def workspace(prefix: str = "loaderlab-") -> tempfile.TemporaryDirectory:
    """Return a temporary directory that is removed on ``.cleanup()``, on GC and at exit.

    Use ``Path(ws.name)`` for files; never print that path (it differs per machine).
    """
    return tempfile.TemporaryDirectory(prefix=prefix)


def _smooth_image(rng: np.random.Generator, size: int, channels: int) -> np.ndarray:
    # Low-frequency colour blobs plus a little noise: compresses like a photo, decodes in
    # a fraction of a millisecond to a few ms depending on size. Shape [H, W] for one channel,
    # [H, W, C] otherwise (PIL infers L / RGB / RGBA from it).
    coarse = rng.integers(0, 256, size=(8, 8, channels), dtype=np.uint8)
    image = np.asarray(
        Image.fromarray(coarse.squeeze(-1) if channels == 1 else coarse).resize(
            (size, size), Image.Resampling.BICUBIC
        )
    )
    noise = rng.integers(-12, 13, size=image.shape)
    return np.clip(image.astype(np.int16) + noise, 0, 255).astype(np.uint8)


def make_image_folder(
    root: str | Path,
    n: int = 64,
    size: int = 64,
    n_grayscale: int = 0,
    n_rgba: int = 0,
    seed: int = 0,
    quality: int = 90,
) -> list[Path]:
    """Write ``n`` RGB JPEGs (plus grayscale and RGBA PNGs) into ``root``; return the paths.

    Files are named ``img_0000.jpg`` …, ``gray_0000.png`` …, ``rgba_0000.png`` …; the same
    seed writes the same pixels. Returned paths are sorted by name.
    """
    require_positive(n, "n")
    require_positive(size, "size")
    for name, value in (("n_grayscale", n_grayscale), ("n_rgba", n_rgba)):
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"root must be an existing directory, got {root.name!r}")
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(n):
        path = root / f"img_{i:04d}.jpg"
        Image.fromarray(_smooth_image(rng, size, 3)).save(path, quality=quality)
        paths.append(path)
    for i in range(n_grayscale):
        path = root / f"gray_{i:04d}.png"
        Image.fromarray(_smooth_image(rng, size, 1)).save(path)
        paths.append(path)
    for i in range(n_rgba):
        path = root / f"rgba_{i:04d}.png"
        Image.fromarray(_smooth_image(rng, size, 4)).save(path)
        paths.append(path)
    return sorted(paths)


def make_token_sequences(
    n: int = 1000,
    median_length: int = 40,
    sigma: float = 0.8,
    max_length: int = 512,
    vocab_size: int = 1000,
    num_classes: int = 2,
    seed: int = 0,
) -> list[tuple[torch.Tensor, int]]:
    """Return ``n`` samples ``(tokens: LongTensor[L], label: int)`` with lognormal lengths.

    Token ids are in ``1..vocab_size-1`` (0 is reserved for padding); lengths are drawn from a
    lognormal with the given median and sigma, clipped to ``1..max_length``.
    """
    require_positive(n, "n")
    require_positive(median_length, "median_length")
    require_positive(max_length, "max_length")
    require_positive(sigma, "sigma", integer=False)
    if vocab_size < 2:
        raise ValueError(f"vocab_size must be >= 2 (0 is padding), got {vocab_size}")
    rng = np.random.default_rng(seed)
    lengths = np.clip(np.round(rng.lognormal(np.log(median_length), sigma, n)), 1, max_length)
    labels = rng.integers(0, num_classes, n)
    return [
        (torch.from_numpy(rng.integers(1, vocab_size, int(length))), int(label))
        for length, label in zip(lengths, labels, strict=True)
    ]


def make_imbalanced_labels(n: int = 1000, minority_fraction: float = 0.1, seed: int = 0) -> torch.Tensor:
    """Return a shuffled LongTensor of ``n`` labels: exactly ``round(n * minority_fraction)``
    ones (the minority class) and zeros for the rest."""
    require_positive(n, "n")
    if not 0 < minority_fraction < 1:
        raise ValueError(f"minority_fraction must be between 0 and 1, got {minority_fraction}")
    labels = torch.zeros(n, dtype=torch.long)
    labels[: round(n * minority_fraction)] = 1
    return labels[torch.randperm(n, generator=torch.Generator().manual_seed(seed))]


def make_metadata(n_rows: int = 100_000, row_chars: int = 64, seed: int = 0) -> list[str]:
    """Return a metadata table as a Python list of ``n_rows`` distinct strings of ``row_chars``.

    This is the layout that defeats copy-on-write in forked workers: every string is its own
    Python object with a reference count that a mere read updates.
    """
    require_positive(n_rows, "n_rows")
    if not isinstance(row_chars, int) or row_chars < 16:
        raise ValueError(f"row_chars must be an int >= 16, got {row_chars!r}")
    rng = np.random.default_rng(seed)
    filler = rng.integers(97, 123, size=row_chars, dtype=np.uint8).tobytes().decode()
    # Each row is a fresh string object: an id prefix and a fixed-width filler.
    return [f"{i:012d}|{filler}"[:row_chars] for i in range(n_rows)]


def metadata_array(rows: list[str]) -> np.ndarray:
    """Return ``rows`` as one fixed-width bytes NumPy array (a single buffer, no per-row objects)."""
    if not isinstance(rows, list) or not rows or not isinstance(rows[0], str):
        raise TypeError("rows must be a non-empty list of str")
    return np.array([row.encode() for row in rows])
