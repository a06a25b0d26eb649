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

from loaderlab.env import progress, setup, start_method, test_mode  # noqa: E402
from loaderlab.measure import (  # noqa: E402
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

__all__ = [
    "__version__",
    "setup",
    "start_method",
    "test_mode",
    "progress",
    "throughput",
    "Pass",
    "OthersCpu",
    "trace_timeline",
    "Timeline",
    "Tracer",
    "WorkerMemorySampler",
    "live_workers",
    "wait_for_workers_to_exit",
    "doctor",
]


def __getattr__(name: str):
    """Load ``loaderlab.doctor`` (the function) on first use.

    ``import loaderlab`` stays light: every worker started by spawn or forkserver that
    unpickles a course object imports the package, and the doctor pulls in the checkers.
    """
    if name == "doctor":
        from loaderlab.doctor import doctor

        globals()["doctor"] = doctor  # the function; ``loaderlab.doctor`` the module stays importable
        return doctor
    raise AttributeError(f"module 'loaderlab' has no attribute {name!r}")
