"""Run the nbval suite N times and report every cell that differed in any run (`make soak`).

Usage: python -m tools.soak [--runs N] [--load] [PATH ...]   (defaults: 3 runs of notebooks solutions)
--load keeps one core busy with a background loop while the suite runs (a machine shared with
another job); the loop is bounded in time and stopped at the end.
Exit status 1 when any cell differed or failed in any run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from tools.course import busy_core

ROOT = Path(__file__).resolve().parent.parent


def failed_cells(junit: Path) -> dict[str, str]:
    """Return ``{file::cell: what differed}`` for the test cases that failed or errored in a
    JUnit report (the last lines of the failure text: nbval ends with the differing output)."""
    failed = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        problem = case.find("failure")
        problem = problem if problem is not None else case.find("error")
        if problem is not None:
            text = (problem.text or problem.get("message") or "").strip().splitlines()
            failed[f"{case.get('classname', '')}::{case.get('name', '')}"] = "\n".join(text[-12:])
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.soak", description=__doc__.split("\n")[0] if __doc__ else None
    )
    parser.add_argument("--runs", type=int, default=3, metavar="N", help="how many runs (default 3)")
    parser.add_argument("paths", nargs="*", metavar="PATH", help="default: notebooks solutions")
    parser.add_argument("--load", action="store_true", help="keep one core busy meanwhile")
    args = parser.parse_args(argv)
    load, runs, paths = args.load, args.runs, args.paths or ["notebooks", "solutions"]
    if runs < 1:
        parser.error("--runs must be at least 1")
    env = dict(os.environ, LOADERLAB_TEST_MODE="1")
    if load:  # twice the quiet machine's 45 s: a shared core slows every notebook down
        env["LOADERLAB_BUDGET_SECONDS"] = "90"
    differing: Counter[str] = Counter()
    # Bounded by the suite's own worst case (27 notebooks x 45 s budget) per run, plus margin.
    loader = busy_core(runs * 1800) if load else None
    if load:
        print("one core kept busy by a background loop while the suite runs")
    try:
        with tempfile.TemporaryDirectory(prefix="loaderlab-soak-") as tmp:
            found = _soak(runs, paths, env, Path(tmp), differing)
    finally:
        if loader is not None:
            loader.kill()
            loader.wait()
    if found is None:
        return 1
    differing = found
    print(f"soak: {len(differing)} differing cells over {runs} runs" + (" (one core busy)" if load else ""))
    for cell, count in sorted(differing.items()):
        print(f"  {cell}  (in {count} of {runs} runs)")
    return 1 if differing else 0


def _soak(
    runs: int, paths: list[str], env: dict[str, str], tmp: Path, differing: Counter[str]
) -> Counter[str] | None:
    """Run the suite ``runs`` times; return every failing cell with its count (None: no report)."""
    for run in range(1, runs + 1):
        junit = tmp / f"run{run}.xml"
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", *paths, f"--junitxml={junit}"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if not junit.exists():
            print(f"run {run}: pytest produced no report")
            return None
        failed = failed_cells(junit)
        differing.update(failed.keys())
        print(f"run {run}/{runs}: {len(failed)} differing or failing cells", flush=True)
        for cell, detail in failed.items():  # printed now: the reports go with the temp dir
            print(f"  {cell}:\n    " + detail.replace("\n", "\n    "), flush=True)
    return differing


if __name__ == "__main__":
    sys.exit(main())
