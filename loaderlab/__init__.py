"""loaderlab: the helper package of the loaderlab course on ``torch.utils.data``.

The lessons' code lives in the notebooks (their ``lessonNN.py`` modules); the package holds:
``env`` (setup, start method, progress), ``data`` (synthetic data makers), ``measure``
(instruments: the one pass timer, ``Tracer``, memory sampler, live workers), ``plots``,
``loaders`` (rebuild, stop, compare loaders), ``bounded`` (run a demo or a command in a child
stopped after a bound), ``failures`` (what a failing loader leaves: errors, stacks), small
helpers for one topic each (``cow``, ``collate``, ``sampling``, ``distributed``, ``streaming``,
``source``, ``datasets``), ``checks`` (lab checkers), ``doctor`` (``loaderlab.doctor(loader)``
or ``python -m loaderlab doctor module:make_loader``), and the private ``_validate``.
``import loaderlab`` imports neither the checkers nor the doctor.
"""

__version__ = "0.1.0"

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the lazy names below are, for type checkers and linters; not run
    from loaderlab.doctor import doctor
    from loaderlab.env import progress, setup, start_method, test_mode
    from loaderlab.measure import (
        OthersCpu,
        Pass,
        Timeline,
        Tracer,
        WorkerMemorySampler,
        live_workers,
        throughput,
        trace_timeline,
        wait_for_workers_to_exit,
    )

# Public names and the module that holds each, imported on first use (PEP 562): ``import
# loaderlab`` imports neither torch nor numpy, so every worker started by spawn or forkserver that
# unpickles a course object pays only for what it uses, and ``make preflight``
# can report a broken torch in one line instead of failing on import.
_EXPORTS = {
    "setup": "env",
    "start_method": "env",
    "test_mode": "env",
    "progress": "env",
    "OthersCpu": "measure",
    "Pass": "measure",
    "Timeline": "measure",
    "Tracer": "measure",
    "WorkerMemorySampler": "measure",
    "live_workers": "measure",
    "throughput": "measure",
    "trace_timeline": "measure",
    "wait_for_workers_to_exit": "measure",
    "doctor": "doctor",  # the function; ``import loaderlab.doctor`` gives the package
}

# The public surface: these names and the submodules a user imports by name (``import
# loaderlab.doctor``, ``from loaderlab.measure import Tracer``). Anything else is internal.
__all__ = [
    "__version__",
    "setup",
    "start_method",
    "test_mode",
    "progress",
    "OthersCpu",
    "Pass",
    "Timeline",
    "Tracer",
    "WorkerMemorySampler",
    "live_workers",
    "throughput",
    "trace_timeline",
    "wait_for_workers_to_exit",
    "doctor",
]


def __getattr__(name: str):
    """Import a public name's module on first use; no other name (a submodule is imported by
    name: ``import loaderlab.plots``, not reached as ``loaderlab.plots`` after ``import loaderlab``)."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"loaderlab.{_EXPORTS[name]}"), name)
        globals()[name] = value  # next time a plain attribute (for doctor: the function)
        return value
    raise AttributeError(f"module 'loaderlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
