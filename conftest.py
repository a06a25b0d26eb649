"""Course-wide budgets for every notebook run by nbval (`make test`).

After the last cell of each notebook an extra test item, ``<notebook>::budget``, checks what a
background sampler measured while the cells ran: wall time (<= 45 s), peak memory of the
kernel plus all its children (summed PSS on Linux, RSS elsewhere; <= 2 GB), and that no child
process (a DataLoader worker, a torchrun rank...) is still alive after the last cell.
The suite ends with a table of these figures.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import psutil
import pytest

# The time budget is for a notebook alone on a quiet machine (45 s, also checked on the idle
# recording in docs/runtimes.json); `make test`, which runs two work units at a time, and
# `make soak LOAD=1`, which keeps a core busy on purpose, raise it through
# LOADERLAB_BUDGET_SECONDS (memory and leftover
# processes are checked as always).
BUDGET_SECONDS = float(os.environ.get("LOADERLAB_BUDGET_SECONDS", "45"))
BUDGET_MB = 2048.0
_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")
_TABLE: list[tuple[str, float, float, int]] = []


def _is_helper(proc: psutil.Process, parent_pid: int) -> bool:
    # multiprocessing's resource tracker and forkserver live as long as the kernel; they are
    # its direct children. Workers started by a forkserver share its command line but are the
    # forkserver's children, so they still count as leftovers.
    try:
        return proc.ppid() == parent_pid and any(h in " ".join(proc.cmdline()) for h in _HELPERS)
    except psutil.Error:
        return True


def _family_mb(root: psutil.Process) -> float:
    total = 0.0
    try:
        procs = [root] + root.children(recursive=True)
    except psutil.Error:
        return 0.0
    for proc in procs:
        try:
            info = proc.memory_full_info()
        except psutil.Error:
            continue
        total += getattr(info, "pss", info.rss)
    return total / 2**20


class _Monitor:
    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.start = time.perf_counter()
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, _family_mb(self.root))
            self._stop.wait(0.2)

    def stop(self) -> tuple[float, float]:
        seconds = time.perf_counter() - self.start
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, _family_mb(self.root))
        return seconds, self.peak_mb

    def leftover(self, wait_s: float = 5.0) -> list[psutil.Process]:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                alive = [p for p in self.root.children(recursive=True)
                         if p.status() != psutil.STATUS_ZOMBIE and not _is_helper(p, self.root.pid)]
            except psutil.Error:
                alive = []
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.1)


class NotebookBudget(pytest.Item):
    """Checks the time, memory and leftover processes of the notebook that just ran."""

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
        if problems:
            raise AssertionError(f"{self.parent.name}: " + "; ".join(problems))

    def reportinfo(self):
        return self.path, 0, f"{self.parent.name}::budget"


def _is_cell(item: pytest.Item) -> bool:
    return type(item).__name__ == "IPyNbCell"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    yield
    parent = item.parent
    if _is_cell(item) and getattr(parent, "_loaderlab_monitor", None) is None:
        kernel = getattr(parent, "kernel", None)
        pid = getattr(getattr(getattr(kernel, "km", None), "provisioner", None), "pid", None)
        if pid:
            parent._loaderlab_monitor = _Monitor(pid)


# `make test` runs unit tests, nbval and the forkserver pass in one pytest with two processes
# (`-n 2 --dist loadscope --no-loadscope-reorder`): a work unit is a test module, a notebook (its
# cells in order, then its budget) or one notebook's forkserver run, and the units go out longest
# first so that neither process is left with a long one at the end. Notebook times come from the
# idle recording (docs/runtimes.json); unit modules' from a measured run, halved (2 processes).
ROOT = Path(__file__).resolve().parent
_RUNTIMES = json.loads((ROOT / "docs" / "runtimes.json").read_text()) if (ROOT / "docs" / "runtimes.json").exists() else {}
_UNIT_SECONDS = {"test_checks_memory": 45, "test_checks_speed": 33, "test_distributed": 28, "test_labs": 26,
                 "test_snippets_12": 25, "test_checks_hangs": 23, "test_doctor": 9, "test_doctor_catalogue": 10,
                 "test_bounded": 20, "test_checks_streaming": 20,
                 "test_measure": 20, "test_checks_loops": 19, "test_site": 17, "test_lesson_edit": 16,
                 "test_failures": 15, "test_checks_seeding": 15, "test_lessons_06": 15,
                 "test_playground_browser": 45, "test_grade": 25, "test_preflight": 20}
_SECOND_PASS = "test_runs_under_forkserver"


def _expected_s(item: pytest.Item) -> float:
    """How long the work unit holding this item takes on its own, roughly."""
    path = Path(str(item.path))
    if path.suffix == ".ipynb":
        return _RUNTIMES.get(path.relative_to(ROOT).as_posix(), 10.0)
    if getattr(item, "originalname", "") == _SECOND_PASS:
        notebook = Path(str(item.callspec.params["path"]))
        return 1.3 * _RUNTIMES.get(notebook.relative_to(ROOT).as_posix(), 10.0)
    return _UNIT_SECONDS.get(path.stem, 5.0)


def pytest_collection_modifyitems(session, config, items):
    last_cell = {}
    for index, item in enumerate(items):
        if _is_cell(item):
            last_cell[item.parent] = index
    for parent, index in sorted(last_cell.items(), key=lambda kv: -kv[1]):
        items.insert(index + 1, NotebookBudget.from_parent(parent, name="budget"))
    items.sort(key=lambda item: -_expected_s(item))  # stable: a unit's items keep their order


class _OneNotebookPerUnit:
    """loadscope, except that each notebook's forkserver run is a work unit of its own."""

    def _split_scope(self, nodeid: str) -> str:
        if f"::{_SECOND_PASS}[" in nodeid:
            return nodeid
        return super()._split_scope(nodeid)


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    scheduler = type("CourseScheduling", (_OneNotebookPerUnit, LoadScopeScheduling), {})
    return scheduler(config, log)


def pytest_runtest_logreport(report):
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
