"""How every lab checker reports (one line, never a traceback), and what checkers share: the
lab's starting loader, one bounded epoch, the first differing batch, a time bound."""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import itertools
import multiprocessing
import signal
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from torch.utils.data import DataLoader

from loaderlab._validate import require_positive
from loaderlab.loaders import batch_size_of, same_batch, stop_workers
from loaderlab.messages import one_line

PASS, FAIL, PENDING = "✅", "❌", "⏳"


class Wrong(Exception):
    """Raised inside a checker body: the message is the one sentence (plus hint) shown to the student."""


class NotCheckable(Exception):
    """Raised inside a checker body when this machine cannot judge the answer (e.g. no fork): the
    checker prints ``⏳ not checkable here: <message>`` and returns False, never ✅."""


class _OneLineError(Exception):
    """An error about how a checker was called; Jupyter shows ``_render_traceback_``, one line."""

    def _render_traceback_(self) -> list[str]:
        return [f"{FAIL} {self}"]


class CheckerTypeError(_OneLineError, TypeError):
    """A checker was given an argument of the wrong type (the message names the argument)."""


class CheckerValueError(_OneLineError, ValueError):
    """A checker was given an argument with an impossible value (the message names it)."""


def _short(value: Any) -> str:
    text = " ".join(repr(value).split())  # a tensor's repr spans lines; the message is one line
    return text if len(text) <= 40 else text[:37] + "..."


def _validate_call(body: Callable[..., Any], candidate: Any, args: tuple, kwargs: dict) -> None:
    """Raise CheckerTypeError / CheckerValueError when the checker itself is called with nonsense."""
    name, signature = body.__name__, inspect.signature(body)
    first = next(iter(signature.parameters))
    if not callable(candidate):
        raise CheckerTypeError(
            f"{name}: `{first}` must be the function (or class) you wrote, got "
            f"{type(candidate).__name__} {_short(candidate)}; pass it without calling "
            f"it, e.g. {name}({first})"
        )
    unknown = [key for key in kwargs if key not in signature.parameters]
    if unknown:  # before a missing argument: the misspelt name is the likelier mistake
        raise CheckerTypeError(f"{name}: got an unexpected keyword argument {unknown[0]!r}")
    try:
        bound = signature.bind(candidate, *args, **kwargs).arguments
    except TypeError as exc:
        raise CheckerTypeError(f"{name}: {exc}") from None
    for key, value in list(bound.items())[1:]:
        default = signature.parameters[key].default
        if default is inspect.Parameter.empty:
            continue  # a required argument (e.g. the lab's starting loader): the body checks it
        if (callable(default) or default is None and value is not None) and not callable(value):
            raise CheckerTypeError(
                f"{name}: `{key}` must be a function, got {type(value).__name__} {_short(value)}"
            )
        if isinstance(default, int) and not isinstance(default, bool):  # a size
            try:
                require_positive(value, f"`{key}`")
            except (TypeError, ValueError) as exc:
                error = CheckerTypeError if isinstance(exc, TypeError) else CheckerValueError
                raise error(f"{name}: {exc}") from None


def _is_stub(exc: BaseException) -> bool:  # from a worker the stub's error may come back wrapped
    text = str(exc)
    return isinstance(exc, NotImplementedError) or "NotImplementedError" in text and "your code here" in text


def _release_workers(exc: BaseException) -> None:
    """Let a failed answer's DataLoader iterator go, and with it its workers: the frames of the
    traceback (and of the errors it chained) hold it. Clearing them frees it at once; a full
    collection (~0.1 s in a big process) only where workers outlive that."""
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        traceback.clear_frames(error.__traceback__)
        error = error.__cause__ or error.__context__
    if multiprocessing.active_children():
        gc.collect()


def checker(body: Callable[..., str]) -> Callable[..., bool]:
    """Turn ``body(candidate, ...) -> confirmation`` into a checker that prints one line: ``Wrong``
    is the sentence shown, ``NotCheckable`` what this machine cannot judge (⏳), another error the
    candidate's, ``NotImplementedError`` the stub. Called
    with nonsense, it raises ``CheckerTypeError`` / ``CheckerValueError`` naming the argument."""

    @functools.wraps(body)
    def run(candidate: Any = None, *args: Any, **kwargs: Any) -> bool:
        if candidate is None:
            print(f"{PENDING} not attempted yet")
            return False
        _validate_call(body, candidate, args, kwargs)
        try:
            confirmation = body(candidate, *args, **kwargs)
        except Exception as exc:
            line = (
                f"{FAIL} {exc}"
                if isinstance(exc, Wrong)
                else f"{PENDING} not checkable here: {exc}"
                if isinstance(exc, NotCheckable)
                else f"{PENDING} not attempted yet"
                if _is_stub(exc)
                else f"{FAIL} your code raised {one_line(exc)}"
            )
            _release_workers(exc)
            del exc
            print(line)
            return False
        print(f"{PASS} {confirmation}")
        return True

    return run


def starting_loader(loader: Any, call: str) -> DataLoader:
    """Return ``loader`` if it can be a lab's starting loader (batched, no workers), else raise Wrong."""
    if isinstance(loader, DataLoader) and not loader.num_workers and loader.batch_sampler is not None:
        return loader
    got = (
        type(loader).__name__
        if not isinstance(loader, DataLoader)
        else f"one with num_workers={loader.num_workers}"
        if loader.num_workers
        else "one with batch_size=None"
    )
    raise Wrong(
        f"{call} needs the lab's starting loader (a DataLoader with num_workers=0) as slow_loader, "
        f"got {got}: run the cell that builds it."
    )


def as_loader(value: Any, call: str, hint: str) -> DataLoader:
    """Return ``value`` if it is a DataLoader, else raise Wrong: ``call`` must return one."""
    if not isinstance(value, DataLoader):
        raise Wrong(f"{call} must return a DataLoader, got {type(value).__name__}. {hint}")
    return value


def epoch(loader: Any, limit: int | None = None, stop: bool = True) -> list[Any]:
    """Return the batches of one pass (at most ``limit``: a stream that never ends cannot hang a
    checker); ``stop``: its workers are shut down at the end, even after an error."""
    iterator = iter(loader)
    try:
        return list(itertools.islice(iterator, limit))
    finally:
        if stop:
            stop_workers(iterator)


def first_diff(batches: list[Any], expected: list[Any]) -> int | None:
    """Return the index of the first batch that differs from ``expected``'s (pairs compared), or None."""
    pairs = zip(batches, expected, strict=False)
    return next((k for k, (a, b) in enumerate(pairs) if not same_batch(a, b)), None)


def compare(
    batches: list[Any],
    expected: list[Any],
    count: str,
    differ: Callable[[int], str],
    sizes: bool = False,
    prefix: bool = False,
) -> None:
    """Raise Wrong(``count``) when ``batches`` and ``expected`` differ in number (``sizes``: in each
    batch's size; ``prefix``: ``batches`` may end early, a bounded epoch), else Wrong(``differ(k)``)
    for the first batch k that holds other values."""
    got: list[int] | int
    want: list[int] | int
    got, want = ([batch_size_of(b) for b in x] if sizes else len(x) for x in (batches, expected))
    if got != (want[: len(got)] if isinstance(want, list) and isinstance(got, list) and prefix else want):
        raise Wrong(count)
    k = first_diff(batches, expected)
    if k is not None:
        raise Wrong(differ(k))


class _Overran(BaseException):  # not an Exception: the answer's own ``except Exception`` lets it pass
    pass


@contextlib.contextmanager
def bounded(seconds: float, wrong: str) -> Iterator[None]:
    """Raise ``Wrong(wrong)`` when the block runs over ``seconds`` (SIGALRM: Unix, main thread;
    elsewhere the block is not bounded). For the answer's code that runs in this process."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def overran(signum: int, frame: Any) -> None:
        raise _Overran

    previous = signal.signal(signal.SIGALRM, overran)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _Overran:
        raise Wrong(wrong) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
