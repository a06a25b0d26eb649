"""``python -m loaderlab doctor my_module:make_loader [--json]``: the doctor's command line. Exit
status 0 when no finding reaches ``--fail-on`` (default ``error``), 1 when one does, 2 for a usage
error (said in one sentence)."""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

USAGE_ERROR, FOUND, CLEAN = 2, 1, 0


class UsageError(Exception):
    """A one-sentence explanation of what is wrong with the command line."""


def resolve(target: str) -> Any:
    """Return the object named by ``module.path:attribute`` (attribute may be dotted)."""
    module_name, _, attribute = target.partition(":")
    if target.count(":") != 1 or not module_name or not attribute:
        raise UsageError(f"target must look like 'my_module:make_loader', got {target!r}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise UsageError(
            f"cannot import module {module_name!r} ({exc}); run from the folder that holds it"
        ) from exc
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"module {module_name!r} has no attribute {attribute!r}")
        obj = getattr(obj, part)
    return obj


def loader_factory(target: str) -> Callable[[], Any]:
    """Return a function that returns the DataLoader named by ``target`` (a DataLoader, or a factory
    called with no argument), raising ``UsageError`` when it is neither. The doctor calls it, so
    that what the loader's creation warns is reported, not printed."""
    obj = resolve(target)
    if not callable(obj) and not _is_loader(obj):
        raise UsageError(f"{target} is a {type(obj).__name__}, not a DataLoader or a function returning one")
    if not _is_loader(obj):
        try:
            inspect.signature(obj).bind()
        except TypeError as exc:
            raise UsageError(f"{target} must be callable with no argument ({exc})") from exc
        except ValueError:  # builtins without a signature: just call them
            pass

    def make() -> Any:
        if _is_loader(obj):
            return obj
        try:
            made = obj()
        except Exception as exc:  # noqa: BLE001 - the user's factory failing is reported in one line
            raise UsageError(f"calling {target}() raised {type(exc).__name__}: {exc}") from exc
        if not _is_loader(made):
            raise UsageError(
                f"{target}() returned a {type(made).__name__}, not a torch.utils.data.DataLoader"
            )
        return made

    return make


def _is_loader(obj: Any) -> bool:
    from torch.utils.data import DataLoader

    return isinstance(obj, DataLoader)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``doctor`` with ``argv`` (after the command name); return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m loaderlab doctor",
        description="probe a DataLoader for the course's pitfalls and print a report",
    )
    add = parser.add_argument
    add("target", help="module:factory (a function returning a DataLoader) or module:loader")
    add(
        "--fail-on",
        choices=("info", "warning", "error"),
        default="error",
        help="exit with status 1 when a finding has this severity or worse (default: error)",
    )
    add("--time-budget", type=float, default=15.0, help="seconds the probes may take (default 15)")
    add("--max-batches", type=int, default=32, help="batches per timed pass (default 32)")
    add("--workers", help="num_workers values to compare with yours (default: one, from the usable cores)")
    add("--step", type=float, default=0.0, help="seconds of your training step per batch (default 0)")
    add("--probes", help="comma-separated probes to run (default: all)")
    add("--between-epochs", help="module:function(loader, epoch) your loop calls between epochs")
    add("--shm-mb", type=float, help="MB of /dev/shm where the loader will run (default: this machine's)")
    add("--json", action="store_true", help="print the report as JSON (for CI)")
    add("--no-progress", action="store_true", help="do not show the progress bar")
    args = parser.parse_args(argv)
    from loaderlab.doctor import PROBES, doctor
    from loaderlab.env import apply_start_method

    apply_start_method()
    try:
        try:
            workers = None if args.workers is None else [int(w) for w in args.workers.split(",") if w.strip()]
        except ValueError:
            raise UsageError("--workers must be a comma-separated list of ints, e.g. 0,2,4") from None
        shm = 1.0 if args.shm_mb is None else args.shm_mb
        negative = min(args.step, *(workers or [0])) < 0
        if workers == [] or min(args.time_budget, args.max_batches, shm) <= 0 or negative:
            raise UsageError(
                "--time-budget, --max-batches and --shm-mb must be > 0, --step and --workers >= 0"
            )
        probes = PROBES if args.probes is None else [p.strip() for p in args.probes.split(",") if p.strip()]
        if not probes or set(probes) - set(PROBES):
            raise UsageError(f"--probes must be a comma-separated list drawn from {', '.join(PROBES)}")
        hook = resolve(args.between_epochs) if args.between_epochs else None
        if hook is not None and not callable(hook):
            raise UsageError(
                f"--between-epochs {args.between_epochs} is a {type(hook).__name__}, not a function"
            )
        report = doctor(
            loader_factory(args.target),
            time_budget_s=args.time_budget,
            max_batches=args.max_batches,
            workers=workers,
            step_s=args.step,
            progress=not (args.no_progress or args.json),
            probes=probes,
            between_epochs=hook,
            shm_bytes=None if args.shm_mb is None else int(args.shm_mb * 1024 * 1024),
        )
    except UsageError as exc:
        print(f"loaderlab doctor: {exc}", file=sys.stderr)
        return USAGE_ERROR
    print(report.to_json() if args.json else report)
    return FOUND if report.at_least(args.fail_on) else CLEAN
