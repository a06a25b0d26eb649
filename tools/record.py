"""Record notebooks: each run alone on a quiet machine, measured, or not written at all.

    make record NB=notebooks/03_x.ipynb      # one notebook (python tools/course.py record ...)
    make record                              # every notebook and solution, one after another

What a learner reads first is the stored record, so it is taken like a measurement. For each
notebook the recorder:

1. waits until the machine is quiet: the other processes' CPU use (the machine's busy CPU time
   minus this process's and its descendants', on the CPUs this process may use:
   ``loaderlab.OthersCpu``, which follows a descendant even after its parent exits) stays under
   ``--threshold`` cores for ``--quiet-s`` seconds in a row; after ``--max-wait`` seconds it
   gives up with a one-line reason;
2. runs the notebook alone through the course's one execution path
   (tools/execute_notebooks.py ``run``), measuring its wall time (kernel start included), the
   idle cores during it (usable cores minus the other processes' CPU use, averaged over the
   run) and the peak memory of the kernel and all its children (summed PSS on Linux, RSS
   elsewhere: ``loaderlab.measure.family``, the same instrument as the test suite's budgets);
3. runs it again (up to ``--tries`` runs) when a measurement stood down (a stored output holds
   ``not measured here:``) or the machine got busy during the run; if no run was quiet and
   complete it writes nothing, prints why and exits with status 1;
4. writes the outputs, ``metadata.loaderlab.record`` = {cores, idle_cores, python, torch,
   platform, start_method, date, seconds, peak_mb}, docs/runtimes.json and docs/peak_memory.json,
   and from them the notebook's "Runs in ... · Peak memory" line and README's course map
   (tools/runtimes.py); after a solution, labs/ is generated again (tools/make_labs.py).

``--force`` runs without waiting for quiet (after ``--max-wait``) and writes the last run even
when it was not quiet or a measurement stood down (its
record then says so in ``forced``, and tests/test_record.py fails on it until a quiet record
replaces it): for trying the recorder on a shared machine, never for the course's record.
Records are taken with the platform's default start method (LOADERLAB_START_METHOD unset).
"""

from __future__ import annotations

import argparse
import datetime
import math
import multiprocessing
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from loaderlab.cores import usable_cores
from loaderlab.measure.family import FamilyMonitor
from loaderlab.measure.memory import OthersCpu

try:  # python -m tools.record (make record), the tests
    from tools import execute_notebooks, runtimes
except ImportError:  # run as a script, `python tools/record.py`: its folder is on sys.path
    import execute_notebooks  # type: ignore[no-redef]
    import runtimes  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent

STOOD_DOWN = "not measured here:"
THRESHOLD = 0.25  # cores the other processes may keep busy: an idle desktop stays under 0.1
QUIET_S = 3.0  # seconds under the threshold, in a row, before a run starts
MAX_WAIT_S = 300.0  # then give up
TRIES = 3
INTERVAL_S = 0.5  # one reading of the others' CPU use while waiting


# --- the others' CPU use ---------------------------------------------------------------------------


def others_cores(interval_s: float) -> float:
    """The cores the other processes kept busy over the next ``interval_s`` seconds (it sleeps),
    on the CPUs this process may use."""
    with OthersCpu(usable_only=True) as others:
        time.sleep(interval_s)
    return others.cores


# --- waiting for a quiet machine -----------------------------------------------------------------


@dataclass
class Quiet:
    """The answer of ``wait_until_quiet``: ``ok``, and ``why`` (one line) when it gave up."""

    ok: bool
    waited_s: float
    why: str = ""
    readings: list[float] = field(default_factory=list)


def wait_until_quiet(
    read: Callable[[float], float],
    clock: Callable[[], float],
    *,
    threshold: float = THRESHOLD,
    quiet_s: float = QUIET_S,
    max_wait_s: float = MAX_WAIT_S,
    interval_s: float = INTERVAL_S,
) -> Quiet:
    """Wait until ``read(interval_s)`` (the others' cores over the next ``interval_s`` seconds) stays
    under ``threshold`` for ``quiet_s`` seconds in a row; give up once ``max_wait_s`` have passed.
    ``clock`` is the time the readings take (injected: tests use a fake clock and a fake reader)."""
    needed = max(1, math.ceil(quiet_s / interval_s - 1e-9))
    start = clock()
    in_a_row, readings = 0, []
    while True:
        cores = read(interval_s)
        readings.append(cores)
        in_a_row = in_a_row + 1 if cores < threshold else 0
        waited = clock() - start
        if in_a_row >= needed:
            return Quiet(True, waited, readings=readings)
        if waited >= max_wait_s:
            recent = readings[-needed:]
            why = (
                f"the machine was not quiet for {quiet_s:g} s within {max_wait_s:g} s: other processes "
                f"kept {sum(recent) / len(recent):.2f} cores busy on average over the last "
                f"{len(recent) * interval_s:g} s (threshold {threshold:g}); stop them, or raise "
                f"--threshold / --max-wait"
            )
            return Quiet(False, waited, why, readings)


# --- one measured run -----------------------------------------------------------------------------


@dataclass
class Run:
    """One run of a notebook: the executed notebook, its wall seconds, peak MB and the others' cores."""

    nb: Any
    seconds: float
    peak_mb: float
    others_cores: float


def measured_run(path: Path, timeout: float = 300) -> Run:
    """Run ``path`` through execute_notebooks.run, with the family's peak memory and the others'
    CPU use measured around it. Raises what ``run`` raises (a cell's error)."""
    others = OthersCpu(usable_only=True, interval_s=0.2)  # follows the children that outlive parents
    monitors: list[FamilyMonitor] = []

    def started(runner) -> None:
        pid = getattr(getattr(getattr(runner, "km", None), "provisioner", None), "pid", None)
        if pid:
            monitors.append(FamilyMonitor(pid))

    others.start()
    try:
        nb, seconds = execute_notebooks.run(path, timeout=timeout, on_kernel=started)
    finally:
        peak = max((m.stop()[1] for m in monitors), default=0.0)
    return Run(nb, seconds, peak, others.stop())


def stood_down(nb) -> list[str]:
    """Each stored output line holding 'not measured here:', as 'cell N: <line>' (N counted from 1)."""
    found = []
    for number, cell in enumerate(nb.cells, 1):
        for line in output_text(cell).splitlines():
            if STOOD_DOWN in line:
                found.append(f"cell {number}: {line.strip()}")
    return found


def output_text(cell) -> str:
    """All the text a cell's stored outputs hold: streams, plain-text results, errors."""
    parts = []
    for output in cell.get("outputs", []):
        parts.append(output.get("text", ""))
        parts.append(output.get("data", {}).get("text/plain", ""))
        parts += [output.get("ename", ""), output.get("evalue", "")]
    return "\n".join(p if isinstance(p, str) else "".join(p) for p in parts if p)


def record_of(run: Run, cores: int, forced: str = "") -> dict:
    """The metadata the notebook keeps about its record."""
    info = run.nb.metadata.get("language_info", {})
    record = {
        "cores": cores,
        "idle_cores": round(max(0.0, cores - run.others_cores), 1),
        "python": info.get("version") or platform.python_version(),
        "torch": _version("torch"),
        "platform": f"{platform.system()} {platform.machine()}",
        "start_method": multiprocessing.get_start_method(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "seconds": round(run.seconds, 1),
        "peak_mb": round(run.peak_mb),
    }
    if forced:
        record["forced"] = forced
    return record


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


# --- the recorder ---------------------------------------------------------------------------------


@dataclass
class Options:
    threshold: float = THRESHOLD
    quiet_s: float = QUIET_S
    max_wait_s: float = MAX_WAIT_S
    tries: int = TRIES
    force: bool = False
    timeout: float = 300


def record(
    path: Path,
    options: Options,
    *,
    quiet: Callable[[], Quiet],
    run: Callable[[Path], Run],
    write: Callable[[Path, Run, str], None],
    say: Callable[[str], None] = print,
) -> bool:
    """Record one notebook: up to ``options.tries`` times, wait for ``quiet()``, ``run`` it, and keep
    the first run that was quiet and complete (``write`` it); return whether one was written.
    A run on a busy machine, or with a stood-down measurement, is tried again; with
    ``options.force`` the last one is written anyway, its reason given to ``write``."""
    name = _shown(path)
    last: Run | None = None
    why = ""
    for attempt in range(1, options.tries + 1):
        waited = quiet()
        if not waited.ok and not options.force:
            why = waited.why
            break
        if not waited.ok:
            say(f"{name}: {waited.why}; running anyway (--force)")
        try:
            last = run(path)
        except Exception as exc:  # a cell failed: nothing to record
            say(f"REFUSED {name}: {execute_notebooks.failure(exc)}")
            for line in getattr(exc, "printed", []):
                say(f"    | {line}")
            return False
        problems = []
        if last.others_cores > options.threshold:
            problems.append(
                f"other processes kept {last.others_cores:.2f} cores busy during the run "
                f"(threshold {options.threshold:g})"
            )
        stood = stood_down(last.nb)
        if stood:
            problems.append(
                f"a measurement stood down ({stood[0]}"
                + (f", and {len(stood) - 1} more" if len(stood) > 1 else "")
                + ")"
            )
        if not problems:
            write(path, last, "")
            say(
                f"recorded {name}: {last.seconds:.1f} s, peak {last.peak_mb:.0f} MB, "
                f"{last.others_cores:.2f} cores used by others (run {attempt} of at most {options.tries})"
            )
            return True
        why = "; ".join(problems)
        say(f"run {attempt} of {name} not kept: {why}")
    if options.force and last is not None:
        write(path, last, why)
        say(f"FORCED {name}: written although {why}: record it again on a quiet machine")
        return True
    say(f"REFUSED {name}: {why}")
    return False


def _shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def write_record(path: Path, run: Run, forced: str) -> None:
    """Store the run's outputs and record in the notebook, then the figures drawn from it."""
    run.nb.metadata.setdefault("loaderlab", {})["record"] = record_of(run, usable_cores(), forced)
    nbformat.write(run.nb, path)
    runtimes.record(path, run.seconds, run.peak_mb)


def parse(argv: list[str]) -> tuple[Options, list[str]]:
    parser = argparse.ArgumentParser(prog="python tools/record.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="default: every notebook and solution")
    parser.add_argument(
        "--threshold",
        type=float,
        default=THRESHOLD,
        help=f"cores other processes may use, before and during a run (default {THRESHOLD})",
    )
    parser.add_argument(
        "--quiet-s",
        type=float,
        default=QUIET_S,
        help=f"seconds under the threshold before a run (default {QUIET_S:g})",
    )
    parser.add_argument(
        "--max-wait",
        type=float,
        default=MAX_WAIT_S,
        help=f"seconds to wait for a quiet machine, then give up (default {MAX_WAIT_S:g})",
    )
    parser.add_argument("--tries", type=int, default=TRIES, help=f"most runs per notebook (default {TRIES})")
    parser.add_argument(
        "--force",
        action="store_true",
        help="write the last run even if not quiet (marked forced: never for the course)",
    )
    args = parser.parse_args(argv)
    options = Options(args.threshold, args.quiet_s, args.max_wait, max(1, args.tries), args.force)
    return options, args.notebooks


def main(argv: Iterable[str] | None = None) -> int:
    options, names = parse(list(sys.argv[1:] if argv is None else argv))
    if os.environ.get("LOADERLAB_START_METHOD"):
        print(
            "record.py: records are taken with the platform's default start method: unset "
            "LOADERLAB_START_METHOD (tools/execute_notebooks.py --no-write runs notebooks under another)"
        )
        return 2
    os.environ["LOADERLAB_TEST_MODE"] = "1"

    def quiet() -> Quiet:
        return wait_until_quiet(
            others_cores,
            time.monotonic,
            threshold=options.threshold,
            quiet_s=options.quiet_s,
            max_wait_s=options.max_wait_s,
        )

    refused, solutions = [], False
    for path in execute_notebooks.notebooks(names):
        if record(
            path, options, quiet=quiet, run=lambda p: measured_run(p, options.timeout), write=write_record
        ):
            solutions |= path.parent == ROOT / "solutions"
        else:
            refused.append(_shown(path))
    if solutions:  # a solution's header changed: its lab shows the same line
        try:
            from tools import make_labs
        except ImportError:  # run as a script, `python tools/record.py`
            import make_labs  # type: ignore[no-redef]

        make_labs.main([])
    if refused:
        print(f"{len(refused)} notebook(s) not recorded: {', '.join(refused)}")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
