"""loaderlab: the helper package of the loaderlab course on ``torch.utils.data``.

Modules: ``env`` (setup, start method, progress), ``data`` (synthetic data makers),
``datasets`` (Dataset classes that workers can unpickle), ``loaders`` (inspect and rebuild
loaders), ``measure`` (instruments), ``plots``.
"""

__version__ = "0.1.0"

from loaderlab.env import progress, setup, start_method, test_mode  # noqa: E402
from loaderlab.measure import (  # noqa: E402
    Throughput,
    Timeline,
    WorkerMemorySampler,
    live_workers,
    simulated_step,
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
    "Throughput",
    "trace_timeline",
    "Timeline",
    "WorkerMemorySampler",
    "live_workers",
    "wait_for_workers_to_exit",
    "simulated_step",
]
