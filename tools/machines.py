"""Run every notebook and solution on other machines' profiles; write docs/machines.md.

`make test-machines` runs this: each notebook under 1 real core (`taskset -c 0`) and under 8
and 16 simulated CPUs (tools/simulation/sitecustomize.py on PYTHONPATH with
LOADERLAB_SIMULATED_CPUS=N: os, multiprocessing and psutil report N CPUs, in the kernel and its
workers; the real cores do the work). Outputs are not compared (tools/execute_notebooks.py
--no-write): every cell must run and every assertion hold. The table in docs/machines.md keeps
the last result of each notebook on each profile (Python version and start method included);
a run over some notebooks updates their rows only.

Usage: python -m tools.machines [--profile NAME ...] [NOTEBOOK ...]   (default: all of both)
Exit status 1 when a notebook failed on a profile that ran.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from loaderlab.processes import configured_start_method
from tools.course_files import FOLDERS
from tools.execute_notebooks import notebooks  # the course's one list of notebooks

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "docs" / "machines.md"
SIMULATION = ROOT / "tools" / "simulation"
TIMEOUT_S = 900  # one notebook on one profile; a notebook's budget is 45 s on 2 idle cores
NOT_RUN = "not run"


@dataclass(frozen=True)
class Profile:
    name: str
    cores: str  # as the table shows it
    prefix: tuple[str, ...] = ()  # command prefix (taskset)
    simulated_cpus: int = 0


PROFILES = (
    Profile("1 core", "1 (real: taskset -c 0)", prefix=("taskset", "-c", "0")),
    Profile("8 CPUs", "8 (simulated)", simulated_cpus=8),
    Profile("16 CPUs", "16 (simulated)", simulated_cpus=16),
)


def python_version() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def start_method() -> str:
    """The start method the notebooks' workers get here (LOADERLAB_START_METHOD, else the default)."""
    return configured_start_method()


def column(profile: Profile, python: str | None = None, method: str | None = None) -> str:
    """The table's column for a profile: '1 core · Python 3.11 · fork'."""
    return f"{profile.name} · Python {python or python_version()} · {method or start_method()}"


def environment(profile: Profile) -> dict[str, str]:
    env = dict(os.environ, LOADERLAB_TEST_MODE="1")
    if profile.simulated_cpus:
        env["LOADERLAB_SIMULATED_CPUS"] = str(profile.simulated_cpus)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SIMULATION), env.get("PYTHONPATH")]))
    else:
        env.pop("LOADERLAB_SIMULATED_CPUS", None)
    return env


def run_one(path: Path, profile: Profile, timeout: float = TIMEOUT_S) -> str:
    """Run one notebook on one profile; return its table cell ('✅ 23 s' or '❌ why')."""
    command = [*profile.prefix, sys.executable, "-m", "tools.execute_notebooks", "--no-write", str(path)]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command, cwd=ROOT, env=environment(profile), capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return f"❌ still running after {timeout:.0f} s"
    seconds = time.perf_counter() - start
    if done.returncode == 0:
        return f"✅ {seconds:.0f} s"
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    failed = next((line for line in lines if line.startswith("FAILED")), lines[-1] if lines else "no output")
    print(
        f"{path.relative_to(ROOT).as_posix()} on {profile.name}: {failed}",
        *[line for line in lines if line.startswith("    | ")],
        sep="\n",
        flush=True,
    )  # what it printed
    return "❌ " + cell_text(failed.split(": ", 1)[-1])


def cell_text(text: str, limit: int = 100) -> str:
    """One line a Markdown table can hold: no pipes, no machine paths, at most ``limit`` characters."""
    text = re.sub(r"(/(?:work|root|tmp|home|Users)/)\S*", "PATH", " ".join(text.split()))
    text = text.replace("|", "/")
    return text if len(text) <= limit else text[: limit - 1] + "…"


HEADER = """# Where the course was tried

Every notebook and solution, run to the end with its outputs not compared (every cell must
run and every assertion hold), on other machines than the 2-core Linux one the outputs were
recorded on: one real core (`taskset -c 0`) and 8 and 16 CPUs simulated (the notebook, its
kernel and its workers see that many CPUs; the 2 real cores do the work, so the times are a
2-core machine's). Written by `make test-machines` (tools/machines.py); do not edit.

Where each profile has run: the columns below, on Linux x86-64 (2 cores) only. macOS (arm64)
and Windows, whose workers start by spawn, and Pythons 3.12 and 3.13 have not run here: the
workflow `.github/workflows/ci.yml` runs the check tier and every notebook and solution under
each platform's own start method on Linux x86-64, macOS arm64 and Windows with Python 3.11,
3.12 and 3.13 once the course is pushed to GitHub; its results are in that workflow's runs.

"""


def read_table(text: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """Return (columns, {notebook: {column: cell}}) from docs/machines.md's table."""
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    if not rows:
        return [], {}
    columns = [c.strip() for c in rows[0].strip("|").split("|")][1:]
    table = {}
    for line in rows[1:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and not set(cells[0]) <= {"-", ":"}:
            table[cells[0].strip("`")] = dict(zip(columns, cells[1:], strict=False))
    return columns, table


def render(columns: list[str], table: dict[str, dict[str, str]]) -> str:
    lines = ["| notebook | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]

    def order(name: str) -> tuple[int, str]:
        folder = name.split("/")[0]
        return (FOLDERS.index(folder) if folder in FOLDERS else len(FOLDERS), name)

    for name in sorted(table, key=order):
        lines.append(f"| `{name}` | " + " | ".join(table[name].get(c, NOT_RUN) for c in columns) + " |")
    return HEADER + "\n".join(lines) + "\n"


def update(results: dict[str, dict[str, str]], text: str, every: list[str]) -> str:
    """The table with ``results`` merged in: one row per notebook in ``every`` (others dropped),
    the script's profiles for this Python and start method first, then any others on record."""
    columns, table = read_table(text)
    ours = [column(p) for p in PROFILES]
    columns = ours + [c for c in columns if c not in ours]
    merged = {name: dict(table.get(name, {})) for name in every}
    for name, cells in results.items():
        merged.setdefault(name, {}).update(cells)
    return render(columns, merged)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.machines", description=__doc__.split("\n")[0] if __doc__ else None
    )
    parser.add_argument(
        "notebook", nargs="*", help="notebooks or folders (default: notebooks/ and solutions/)"
    )
    parser.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="NAME",
        help=f"one of {', '.join(p.name for p in PROFILES)} (again for more; default: all)",
    )
    parsed = parser.parse_args(argv)
    names, args = parsed.profile, parsed.notebook
    profiles = [p for p in PROFILES if not names or p.name in names]
    if names and len(profiles) != len(names):
        print(f"unknown profile: choose from {', '.join(p.name for p in PROFILES)}")
        return 2
    if any(p.prefix[:1] == ("taskset",) for p in profiles) and not shutil.which("taskset"):
        print("taskset not found (util-linux): the 1-core profile runs on Linux only")
        profiles = [p for p in profiles if p.prefix[:1] != ("taskset",)]
    results: dict[str, dict[str, str]] = {}
    failed = 0
    for path in notebooks(args):
        rel = path.relative_to(ROOT).as_posix()
        for profile in profiles:
            cell = run_one(path, profile)
            failed += cell.startswith("❌")
            results.setdefault(rel, {})[column(profile)] = cell
            print(f"{rel:52} {profile.name:8} {cell}", flush=True)
    every = [p.relative_to(ROOT).as_posix() for p in notebooks([])]
    TABLE.write_text(update(results, TABLE.read_text() if TABLE.exists() else "", every))
    print(f"{TABLE.relative_to(ROOT)}: {sum(map(len, results.values()))} results written, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
