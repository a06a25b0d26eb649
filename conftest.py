"""Course-wide budgets for every notebook run by nbval (`make test`), and the suite's schedule.

After the last cell of each notebook an extra test item, ``<notebook>::budget``, checks what a
background sampler measured while the cells ran: wall time (<= 45 s), peak memory of the
kernel plus all its children (summed PSS on Linux, RSS elsewhere; <= 2 GB), that no child
process (a DataLoader worker, a torchrun rank...) is still alive after the last cell, and, for
the notebooks in notebooks/ run with fork, that every loader leaving the start method to the
default could start its workers under spawn too (tools/simulation/spawnguard.py: nothing it
sends them lives only in a notebook cell, everything pickles). The suite ends with a table.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from nbval.plugin import IPyNbCell

from tools.course import CHECK, compare_outputs

# Progress bars print one stable line per call, for nbval and for tests that read them.
os.environ.setdefault("LOADERLAB_TEST_MODE", "1")

# The time budget is for a notebook alone on a quiet machine (45 s, also checked on the idle
# recording in docs/runtimes.json); `make test`, which runs two work units at a time, and
# `make soak LOAD=1`, which keeps a core busy on purpose, raise it through
# LOADERLAB_BUDGET_SECONDS (memory and leftover
# processes are checked as always).
BUDGET_SECONDS = float(os.environ.get("LOADERLAB_BUDGET_SECONDS", "45"))
BUDGET_MB = 2048.0
_TABLE: list[tuple[str, float, float, int]] = []
ROOT = Path(__file__).resolve().parent
MACHINES = ROOT / "tools" / "simulation"  # sitecustomize.py + spawnguard.py, for the kernels


class NotebookBudget(pytest.Item):
    """Checks the time, memory, leftover processes and spawn-safety of the notebook that just ran."""

    def runtest(self) -> None:
        monitor = getattr(self.parent, "_loaderlab_monitor", None)
        if monitor is None:
            pytest.skip("no cell of this notebook ran")
        seconds, peak_mb = monitor.stop()
        leftover = monitor.leftover()
        self.user_properties.append(("budget", (self.parent.name, seconds, peak_mb, len(leftover))))
        problems = []
        if seconds > BUDGET_SECONDS:
            problems.append(f"ran {seconds:.0f} s (budget {BUDGET_SECONDS:.0f} s)")
        if peak_mb > BUDGET_MB:
            problems.append(f"peaked at {peak_mb:.0f} MB (budget {BUDGET_MB:.0f} MB)")
        if leftover:
            names = ", ".join(sorted({p.name() for p in leftover}))
            problems.append(f"left {len(leftover)} child process(es) alive ({names})")
        guard = Path(os.environ.get(_GUARD_ROOT, "")) / f"{monitor.root.pid}.txt"
        if os.environ.get(_GUARD_ROOT) and guard.exists():
            lines = sorted(set(guard.read_text().splitlines()))
            problems.append(
                "a loader's workers could not start under spawn (macOS, Windows): "
                + "; ".join(lines)
                + " (put worker code in a %%writefile module)"
            )
        if problems:
            raise AssertionError(f"{self.parent.name}: " + "; ".join(problems))

    def reportinfo(self):
        return self.path, 0, f"{self.parent.name}::budget"


def _is_cell(item: pytest.Item) -> bool:
    return isinstance(item, IPyNbCell)


def kernel_pid(kernel) -> int | None:
    """The pid of a notebook's kernel: nbval's RunningKernel keeps jupyter_client's KernelManager
    as ``km`` (not documented by nbval), whose provisioner (LocalProvisioner) holds the pid.
    tests/test_pinned_internals.py names the versions this was checked with."""
    return getattr(getattr(getattr(kernel, "km", None), "provisioner", None), "pid", None)


# The spawn guard (tools/simulation/spawnguard.py) runs in the kernels of notebooks/ when workers
# start by fork: a notebook run with another start method pickles for real, and the solutions'
# checkers fork the student's __main__ classes on purpose. Its reports go to one folder per
# pytest process (_GUARD_ROOT names it); a notebook's kernel writes <its pid>.txt there.
_GUARD = "LOADERLAB_SPAWN_GUARD"
_GUARD_ROOT = "LOADERLAB_SPAWN_GUARD_ROOT"


def pytest_configure(config):
    # `python -m pytest` with no -m runs the check tier (tools/course.py says what each runs)
    if not config.option.markexpr:
        config.option.markexpr = CHECK
    # stored outputs are compared only where they were recorded; elsewhere nbval's lax mode
    if getattr(config.option, "nbval", False) and not compare_outputs():
        config.option.nbval_lax = True
    if (os.environ.get("LOADERLAB_START_METHOD") or "fork") == "fork" and hasattr(os, "fork"):
        os.environ[_GUARD_ROOT] = tempfile.mkdtemp(prefix="loaderlab-spawnguard-")


def pytest_report_header(config):
    if config.option.markexpr == CHECK:
        return "the check tier's tests (tools/course.py CHECK; `make check` runs them in 2 processes)"
    if getattr(config.option, "nbval_lax", False) and not compare_outputs():
        return "outputs not compared here (recorded on Linux, Python 3.11): notebooks run in nbval's lax mode"
    return None


def pytest_unconfigure(config):
    folder = os.environ.pop(_GUARD_ROOT, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    parent = item.parent
    first = _is_cell(item) and getattr(parent, "_loaderlab_monitor", None) is None
    saved = {name: os.environ.get(name) for name in (_GUARD, "PYTHONPATH")}
    notebook = Path(str(item.path)).parent.name == "notebooks"
    if first and notebook and os.environ.get(_GUARD_ROOT):  # the kernel starts in this setup
        os.environ[_GUARD] = os.environ[_GUARD_ROOT]
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(MACHINES), saved["PYTHONPATH"]]))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    kernel = getattr(parent, "kernel", None) if first else None
    if kernel is not None:
        pid = kernel_pid(kernel)
        if not pid:  # a silent skip would drop the notebook's budget check
            raise RuntimeError(
                "conftest.py cannot find the kernel's pid at kernel.km.provisioner.pid "
                "(nbval or jupyter_client changed): see tests/test_pinned_internals.py"
            )
        # the one implementation of "a kernel and all its children", shared with the recorder
        # (tools/record.py); imported here, not at the top: loaderlab.measure imports torch, which
        # xdist's controller and a pytest run without notebooks do not need (about 2-3 s a process)
        from loaderlab.measure.family import FamilyMonitor

        parent._loaderlab_monitor = FamilyMonitor(pid)


# Work units go out longest first, so that no process is left with a long one at the end
# (`--dist loadscope --no-loadscope-reorder`: a unit is a test module or a notebook, its cells in
# order, then its budget). A unit's time is the sum of its selected tests' times in the last run
# that ran each (pytest's cache, key ITEM_SECONDS), else for a notebook its idle recording
# (docs/runtimes.json), else an estimate from the markers (course tests take seconds).
ITEM_SECONDS = "loaderlab/item_seconds"
_COURSE_TEST_S, _CHECK_TEST_S, _NOTEBOOK_S = 1.5, 0.05, 10.0
_RUNTIMES_FILE = ROOT / "docs" / "runtimes.json"
_RUNTIMES = json.loads(_RUNTIMES_FILE.read_text()) if _RUNTIMES_FILE.exists() else {}
_MEASURED: dict[str, float] = {}


def _unit(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _estimates(config, items: list[pytest.Item]) -> dict[str, float]:
    """Seconds per work unit, from the last run, the recording or the markers."""
    cache = getattr(config, "cache", None)
    last = cache.get(ITEM_SECONDS, {}) if cache is not None else {}
    seconds: dict[str, float] = {}
    unrecorded_notebooks = set()
    for item in items:
        unit = _unit(item.nodeid)
        if item.nodeid in last:
            seconds[unit] = seconds.get(unit, 0.0) + last[item.nodeid]
        elif Path(str(item.path)).suffix == ".ipynb":
            unrecorded_notebooks.add(unit)
        else:
            slow = item.get_closest_marker("course") or item.get_closest_marker("spawn")
            seconds[unit] = seconds.get(unit, 0.0) + (_COURSE_TEST_S if slow else _CHECK_TEST_S)
    for unit in unrecorded_notebooks:
        seconds[unit] = max(seconds.get(unit, 0.0), _RUNTIMES.get(unit, _NOTEBOOK_S))
    return seconds


def pytest_collection_modifyitems(session, config, items):
    last_cell = {}
    for index, item in enumerate(items):
        if _is_cell(item):
            last_cell[item.parent] = index
    for parent, index in sorted(last_cell.items(), key=lambda kv: -kv[1]):
        items.insert(index + 1, NotebookBudget.from_parent(parent, name="budget"))
    seconds = _estimates(config, items)
    items.sort(key=lambda item: -seconds[_unit(item.nodeid)])  # stable: a unit's items keep their order


def pytest_runtest_logreport(report):
    _MEASURED[report.nodeid] = _MEASURED.get(report.nodeid, 0.0) + report.duration
    if report.when == "call":
        for key, value in report.user_properties:
            if key == "budget":
                _TABLE.append(tuple(value))


def pytest_terminal_summary(terminalreporter):
    if not _TABLE:
        return
    write = terminalreporter.write_line
    terminalreporter.section(f"notebook budgets ({BUDGET_SECONDS:.0f} s, 2048 MB, no leftover processes)")
    write(f"{'notebook':<48} {'seconds':>8} {'peak MB':>8} {'leftover':>9}")
    for name, seconds, peak_mb, leftover in sorted(_TABLE):
        write(f"{name:<48} {seconds:>8.1f} {peak_mb:>8.0f} {leftover:>9d}")


def pytest_sessionfinish(session):
    """Store each test's measured time for the next run's schedule (once, in xdist's controller);
    tests whose file is gone are forgotten."""
    cache = getattr(session.config, "cache", None)
    if cache is None or hasattr(session.config, "workerinput") or not _MEASURED:
        return
    seconds = cache.get(ITEM_SECONDS, {})
    seconds.update({nodeid: round(value, 3) for nodeid, value in _MEASURED.items()})
    cache.set(ITEM_SECONDS, {k: v for k, v in seconds.items() if (ROOT / _unit(k)).exists()})
