"""Course-wide budgets for every notebook run by nbval (`make test`).

After the last cell of each notebook an extra test item, ``<notebook>::budget``, checks what a
background sampler measured while the cells ran: wall time (<= 45 s), peak memory of the
kernel plus all its children (summed PSS on Linux, RSS elsewhere; <= 2 GB), and that no child
process (a DataLoader worker, a torchrun rank...) is still alive after the last cell.
The suite ends with a table of these figures.
"""

from __future__ import annotations

import os
import threading
import time

import psutil
import pytest

# The time budget holds on a quiet machine (`make test`); `make soak LOAD=1`, which keeps a
# core busy on purpose, raises it through LOADERLAB_BUDGET_SECONDS (memory and leftover
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


def pytest_collection_modifyitems(session, config, items):
    last_cell = {}
    for index, item in enumerate(items):
        if _is_cell(item):
            last_cell[item.parent] = index
    for parent, index in sorted(last_cell.items(), key=lambda kv: -kv[1]):
        items.insert(index + 1, NotebookBudget.from_parent(parent, name="budget"))


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
