"""loaderlab: the helper package of the loaderlab course on ``torch.utils.data``.

Modules: ``env`` (setup, start method, progress), ``data`` (synthetic data makers),
``datasets`` (Dataset classes that workers can unpickle), ``loaders`` (inspect and rebuild
loaders), ``measure`` (instruments), ``plots``, ``checks`` (lab checkers), ``doctor`` (probe a
loader for the course's pitfalls: ``loaderlab.doctor(loader)`` or
``python -m loaderlab doctor module:make_loader``), and one module per notebook topic.
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
