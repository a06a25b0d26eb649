"""Make every Python started with this folder on PYTHONPATH see LOADERLAB_SIMULATED_CPUS CPUs.

A stand-in (tests and `make test-machines` only) for a bigger (or smaller) laptop:
`os.cpu_count`, `os.process_cpu_count`, `os.sched_getaffinity`, `multiprocessing.cpu_count`
(through os), `psutil.cpu_count` and `psutil.Process.cpu_affinity()` report the simulated
count; the real cores still do the work.
Kernels and DataLoader workers inherit PYTHONPATH, so they see the same machine. Never imported
by the package: `tools/machines.py` (make test-machines) and the tests put it on PYTHONPATH.
With LOADERLAB_SPAWN_GUARD set it also installs spawnguard.py (what spawn could not pickle).
"""

# it replaces functions of os and psutil on purpose
# mypy: disable-error-code="misc, assignment, method-assign"

import os

_CPUS = int(os.environ.get("LOADERLAB_SIMULATED_CPUS", "0") or 0)

if _CPUS > 0:
    os.cpu_count = lambda: _CPUS
    if hasattr(os, "process_cpu_count"):  # Python 3.13
        os.process_cpu_count = lambda: _CPUS
    if hasattr(os, "sched_getaffinity"):
        os.sched_getaffinity = lambda pid=0: set(range(_CPUS))
    try:
        import psutil
    except ImportError:  # a bare interpreter (preflight before install): os is enough
        psutil = None
    if psutil is not None:
        psutil.cpu_count = lambda logical=True: _CPUS
        _real_affinity = psutil.Process.cpu_affinity

        def _cpu_affinity(self, cpus=None):
            if cpus is None:
                return list(range(_CPUS))
            return _real_affinity(self, cpus)

        psutil.Process.cpu_affinity = _cpu_affinity

if os.environ.get("LOADERLAB_SPAWN_GUARD"):
    import spawnguard

    spawnguard.install()
