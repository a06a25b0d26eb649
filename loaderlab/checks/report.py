"""How every lab checker reports: one line, never a traceback."""

from __future__ import annotations

import functools
import gc
import inspect
from collections.abc import Callable
from typing import Any

PASS, FAIL, PENDING = "✅", "❌", "⏳"


class Wrong(Exception):
    """Raised inside a checker body: the message is the one sentence (plus hint) shown to the student."""


class _OneLineError(Exception):
    """An error about how a checker was called. In Jupyter it shows as its one sentence, not a
    traceback (IPython prints what ``_render_traceback_`` returns instead of the traceback)."""

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
    """Raise CheckerTypeError / CheckerValueError when the checker itself is called with
    nonsense: a candidate that is not a function or class, arguments the checker does not
    take, a non-callable where it expects one, or a size that is not a positive int."""
    name = body.__name__
    parameters = list(inspect.signature(body).parameters.values())
    first = parameters[0].name
    if not callable(candidate):
        raise CheckerTypeError(
            f"{name}: `{first}` must be the function (or class) you wrote, got "
            f"{type(candidate).__name__} {_short(candidate)}; pass it without calling it, "
            f"e.g. {name}({first})"
        )
    unknown = [key for key in kwargs if key not in {p.name for p in parameters}]
    if unknown:  # before a missing argument: the misspelt name is the likelier mistake
        raise CheckerTypeError(f"{name}: got an unexpected keyword argument {unknown[0]!r}")
    try:
        bound = inspect.signature(body).bind(candidate, *args, **kwargs)
    except TypeError as exc:
        raise CheckerTypeError(f"{name}: {exc}") from None
    for parameter in parameters[1:]:
        if parameter.name not in bound.arguments:
            continue
        value = bound.arguments[parameter.name]
        default = parameter.default
        if default is inspect.Parameter.empty:
            continue  # a required argument (e.g. the lab's starting loader): the body checks it
        if callable(default) or (default is None and value is not None):
            # an optional second function (e.g. check_ddp_epochs' eval_indices)
            if not callable(value):
                raise CheckerTypeError(
                    f"{name}: `{parameter.name}` must be a function, got "
                    f"{type(value).__name__} {_short(value)}"
                )
        elif isinstance(default, int) and not isinstance(default, bool):
            if isinstance(value, bool) or not isinstance(value, int):
                raise CheckerTypeError(
                    f"{name}: `{parameter.name}` must be an int, got {type(value).__name__}"
                )
            if value <= 0:
                raise CheckerValueError(f"{name}: `{parameter.name}` must be > 0, got {value}")


def one_line(exc: BaseException) -> str:
    """Return ``Type: message`` for an exception, on one line.

    For an error re-raised from a DataLoader worker, whose message embeds the worker's whole
    traceback, the original exception's own last line is used.
    """
    text = str(exc).strip()
    if "Original Traceback" in text:
        lines = [line for line in text.splitlines() if line.strip()]
        return lines[-1].strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _is_stub(exc: BaseException) -> bool:
    if isinstance(exc, NotImplementedError):
        return True
    # A stub raising inside a DataLoader worker comes back as NotImplementedError too, but be
    # lenient with wrappers that lost the type.
    return "NotImplementedError" in str(exc) and "your code here" in str(exc)


def _release_workers() -> None:
    # A loader that failed mid-epoch keeps its worker processes until its iterator is garbage
    # collected; the traceback of the failure holds the iterator, so collect now.
    gc.collect()


def checker(body: Callable[..., str]) -> Callable[..., bool]:
    """Turn ``body(candidate, ...) -> confirmation`` into a checker that prints one line.

    ``body`` raises ``Wrong("what is wrong. Hint: ...")`` when the candidate misbehaves; any
    other exception is the candidate's (reported as ``❌`` with its one-line summary), and
    ``NotImplementedError`` (the lab stub) is reported as not attempted.

    Calling the checker itself with nonsense (a candidate that is not a function, an unknown
    argument, a non-positive size) raises ``CheckerTypeError`` / ``CheckerValueError``
    (subclasses of ``TypeError`` / ``ValueError``) naming the argument; in Jupyter it shows
    as one line.
    """

    @functools.wraps(body)
    def run(candidate: Any = None, *args: Any, **kwargs: Any) -> bool:
        if candidate is None:
            print(f"{PENDING} not attempted yet")
            return False
        _validate_call(body, candidate, args, kwargs)
        try:
            confirmation = body(candidate, *args, **kwargs)
        except Wrong as wrong:
            _release_workers()
            print(f"{FAIL} {wrong}")
            return False
        except Exception as exc:  # the candidate's own error: one line, no traceback
            summary = one_line(exc)
            stub = _is_stub(exc)
            del exc
            _release_workers()
            print(f"{PENDING} not attempted yet" if stub else f"{FAIL} your code raised {summary}")
            return False
        print(f"{PASS} {confirmation}")
        return True

    return run
