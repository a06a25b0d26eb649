"""Run the nbval suite N times and report every cell that differed in any run (`make soak`).

Usage: python tools/soak.py [N=3] [PATH ...]   (default paths: notebooks solutions)
Exit status 1 when any cell differed or failed in any run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

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


def main(argv: list[str]) -> int:
    runs = int(argv[0]) if argv and argv[0].isdigit() else 3
    paths = [a for a in argv if not a.isdigit()] or ["notebooks", "solutions"]
    if runs < 1:
        print("N must be at least 1")
        return 2
    env = dict(os.environ, LOADERLAB_TEST_MODE="1")
    differing: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="loaderlab-soak-") as tmp:
        for run in range(1, runs + 1):
            junit = Path(tmp) / f"run{run}.xml"
            subprocess.run([sys.executable, "-m", "pytest", "-q", *paths, f"--junitxml={junit}"],
                           cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if not junit.exists():
                print(f"run {run}: pytest produced no report")
                return 1
            failed = failed_cells(junit)
            differing.update(failed.keys())
            print(f"run {run}/{runs}: {len(failed)} differing or failing cells")
            for cell, detail in failed.items():  # printed now: the reports go with the temp dir
                print(f"  {cell}:\n    " + detail.replace("\n", "\n    "))
    print(f"soak: {len(differing)} differing cells over {runs} runs")
    for cell, count in sorted(differing.items()):
        print(f"  {cell}  (in {count} of {runs} runs)")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
