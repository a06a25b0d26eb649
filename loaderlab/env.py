"""The course environment, used by every notebook and lab: ``setup`` (seeds, the start method
from ``LOADERLAB_START_METHOD``, the versions line), ``start_method``, ``can_fork``, ``test_mode``
and ``progress``."""

from __future__ import annotations

import multiprocessing
import os
import platform
import random
import sys
import warnings
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import numpy as np
import torch

from loaderlab.processes import START_METHOD_VARIABLE, configured_start_method

TEST_MODE_VARIABLE = "LOADERLAB_TEST_MODE"
START_METHODS = ("fork", "spawn", "forkserver")
FORKSERVER_PRELOAD = ("torch", "numpy", "loaderlab")

T = TypeVar("T")


def test_mode() -> bool:
    """Return True when notebooks run under `make test` / `make execute` (stable outputs wanted)."""
    return os.environ.get(TEST_MODE_VARIABLE, "") not in ("", "0", "false", "False")


def can_fork() -> bool:
    """Return True where processes can be started with ``fork`` (Linux, macOS; not Windows).

    The one answer to "can this lesson fork here?": a lesson that needs fork asks for a fork
    context explicitly (``multiprocessing_context="fork"``) wherever this is True, whatever
    the default start method (macOS defaults to spawn but has fork).
    """
    return "fork" in multiprocessing.get_all_start_methods()


def start_method() -> str:
    """Return the start method that new DataLoader workers will use in this process."""
    return multiprocessing.get_start_method(allow_none=False)


def apply_start_method() -> str:
    """Apply ``LOADERLAB_START_METHOD`` (fork/spawn/forkserver) if set; return the method in use.

    macOS and Windows default to ``spawn``; setting ``LOADERLAB_START_METHOD=spawn`` on Linux
    runs the course the way those users run it.
    """
    wanted = configured_start_method()
    if os.environ.get(START_METHOD_VARIABLE, "").strip():
        if wanted not in multiprocessing.get_all_start_methods():
            raise ValueError(
                f"{START_METHOD_VARIABLE}={wanted!r} is not available here; "
                f"choose one of {multiprocessing.get_all_start_methods()}"
            )
        if multiprocessing.get_start_method(allow_none=True) != wanted:
            multiprocessing.set_start_method(wanted, force=True)
    if start_method() == "forkserver":
        # The server imports these once; every worker forked from it starts without
        # importing torch again (notebook 12). Objects still travel pickled, as under spawn.
        multiprocessing.set_forkserver_preload(list(FORKSERVER_PRELOAD))
    return start_method()


def _plain_warning(message, category, filename, lineno, line=None) -> str:
    # The default format starts with the absolute path of the file that warned, which differs
    # from machine to machine; the course shows the category and the message only.
    return f"{category.__name__}: {message}\n"


def seed_everything(seed: int = 0) -> None:
    """Seed Python's ``random``, NumPy's global generator and torch."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def environment_report() -> dict[str, str]:
    """Return the versions and platform facts that the course's outputs depend on."""
    from loaderlab import __version__

    return {
        "loaderlab": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__.split("+")[0],
        "numpy": np.__version__,
        "platform": f"{platform.system()} {platform.machine()}",
        "cpus": str(os.cpu_count()),
        "start method": start_method(),
    }


def setup(seed: int = 0, quiet: bool = False) -> None:
    """Prepare a notebook: seed everything, apply the start method, print the environment.

    Warnings are shown as ``Category: message`` (no machine paths), so stored outputs are the
    same on every machine. ``environment_report()`` returns the printed facts as a dict.
    """
    seed_everything(seed)
    apply_start_method()
    warnings.formatwarning = _plain_warning
    report = environment_report()
    if not quiet:
        print(" | ".join(f"{k} {v}" for k, v in report.items()))


def progress(iterable: Iterable[T], desc: str = "", total: int | None = None) -> Iterator[T]:
    """Wrap ``iterable`` in a tqdm progress bar; in test mode print one stable line instead.

    A live bar's text changes with timing, so stored notebook outputs could never match; in
    test mode (``LOADERLAB_TEST_MODE=1``) the bar is replaced by ``desc: n/total done``.
    """
    if not test_mode():
        from tqdm.auto import tqdm

        yield from tqdm(iterable, desc=desc, total=total)
        return
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    n = 0
    for n, item in enumerate(iterable, start=1):  # noqa: B007
        yield item
    print(f"{desc}: {n}/{total if total is not None else n} done", file=sys.stdout)


def worker_start_method(dataset: Any) -> str | None:
    """Return the start method to run ``dataset`` in workers with: this session's own, or ``fork``
    when the Dataset's class lives in ``__main__`` (a notebook cell), which workers started by spawn
    or forkserver cannot import; None when such a class cannot be forked here (Windows)."""
    if type(dataset).__module__ != "__main__" or start_method() == "fork":
        return start_method()
    return "fork" if can_fork() else None
