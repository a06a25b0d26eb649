"""The course's one entry point: what `make X` does, on Linux, macOS and Windows.

    python3 tools/course.py lab          # Windows, no make needed: py tools/course.py lab

The Makefile's recipes call this file (`make X` runs `python3 tools/course.py X`). It uses the
standard library only: it creates the course's virtual environment (.venv) with the Python that
runs it, and runs everything else with .venv's Python (.venv\\Scripts\\python.exe on Windows,
.venv/bin/python elsewhere). Setup runs again only when its inputs change (requirements, the
installer, the JupyterLab settings): a stamp in .venv records what was installed.

Two installs: `lab` (and `setup`) install what the notebooks and labs import (requirements.txt);
the maintainers' commands (test, check, lint, execute, html, ...) add the test, lint and site
tools (requirements-dev.txt). The test commands run pytest with the tiers below (CHECK, COURSE,
TIMING...). `--dry-run` prints the commands without running them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
STAMP_NAME = ".loaderlab-installed"
KERNEL = "loaderlab"  # the Jupyter kernel setup registers; kernel_specs() looks it up
FORMATTED = ["loaderlab", "tools", "tests", "conftest.py"]  # the course's text is left as written
WORKFLOWS = [ROOT / ".github" / "workflows" / "ci.yml"]  # linted by check-jsonschema
LINT_PATHS = ["loaderlab", "tests", "tools", "docs", "notebooks", "solutions", "conftest.py"]
# what each install level reads: a change in one of these files re-runs setup
SETUP_INPUTS = {
    "lab": [
        "requirements.txt",
        "pyproject.toml",
        "tools/install.py",
        "jupyter/overrides.json",
        "jupyter/jupyter_server_config.json",
    ],
}
SETUP_INPUTS["dev"] = [*SETUP_INPUTS["lab"], "requirements-dev.txt"]
LEVELS = ("lab", "dev")  # each includes the ones before it
SUPPORTED = [(3, 11), (3, 12), (3, 13)]  # numpy 2.4 needs 3.11; 3.11-3.13 are the ones tested
SUPPORTED_TEXT = "Python 3.11, 3.12 or 3.13"
TEST_TIERS = ("test", "check", "test-spawn", "unit", "notebooks")

# command -> (install level it needs, or None: runs before or without setup; one-line help)
COMMANDS: dict[str, tuple[str | None, str]] = {
    "setup": ("lab", "create .venv and install what the notebooks and labs need"),
    "lab": ("lab", "set up, then open JupyterLab on the course"),
    "preflight": (None, "is this machine ready? (before setup: the standard library checks)"),
    "wheelhouse": ("lab", "download every wheel a student needs into wheelhouse/"),
    "student": (None, "zip the course for students: build/loaderlab-student.zip"),
    "test": ("dev", "lint, then every test, notebook and solution (timing tests alone)"),
    "check": ("dev", "lint, then the fast deterministic tier (no clock, no kernel)"),
    "test-spawn": ("dev", "every notebook and solution with workers started by spawn"),
    "test-machines": ("dev", "the course under 1 real and simulated bigger CPU counts (tools/machines.py)"),
    "unit": ("dev", "the unit tests only"),
    "notebooks": ("dev", "nbval on notebooks/ and solutions/ only"),
    "execute": ("dev", "re-execute notebooks in place, outputs only (NB=...)"),
    "record": ("dev", "record notebooks on a quiet machine: outputs, run time, peak memory (NB=...)"),
    "labs": ("dev", "regenerate labs/ from solutions/ (--check: only say whether they are current)"),
    "claims": (None, "rebuild docs/claims.md from the notebooks' printed verdicts (--check: only check)"),
    "html": ("dev", "build the static site under site/"),
    "soak": ("dev", "run the nbval suite N times and list every cell that ever differed"),
    "lint": ("dev", "ruff over the code, tests and notebooks; mypy; the import contracts; the workflow"),
    "clean": (None, "remove .venv, site/ and pytest's cache"),
}


def kernel_specs() -> dict[str, list[str]]:
    """The registered Jupyter kernels, name -> the argv that starts them: the tools' one lookup of
    the course's kernel (``KERNEL in kernel_specs()``). Needs jupyter_client (after setup)."""
    from jupyter_client.kernelspec import KernelSpecManager

    return {name: spec["spec"].get("argv", []) for name, spec in KernelSpecManager().get_all_specs().items()}


def venv_python(venv: Path | None = None, platform: str = sys.platform) -> Path:
    """The virtual environment's Python (default: .venv's): ``Scripts\\python.exe`` on Windows,
    ``bin/python`` elsewhere."""
    return (VENV if venv is None else venv) / ("Scripts/python.exe" if platform == "win32" else "bin/python")


def shown(argv: Sequence[str | os.PathLike]) -> str:
    """``argv`` as one line a person could paste into this platform's shell at the repository's
    root (paths under it are shown relative to it)."""
    parts = [
        os.path.relpath(a, ROOT) if isinstance(a, Path) and a.is_relative_to(ROOT) else os.fspath(a)
        for a in argv
    ]
    return subprocess.list2cmdline(parts) if sys.platform == "win32" else shlex.join(parts)


class Runner:
    """Runs (or, with ``dry_run``, only prints) commands from the repository root."""

    def __init__(self, dry_run: bool = False) -> None:
        self.dry_run = dry_run

    def __call__(
        self,
        argv: Sequence[str | os.PathLike],
        env: Mapping[str, str] | None = None,
        quiet: bool = False,
        unset: Sequence[str] = (),
    ) -> int:
        """Print ``+ command`` (with the variables it adds or removes) and run it with them;
        return its exit status. ``quiet``: its standard output is discarded."""
        added = [f"{k}={v}" for k, v in (env or {}).items() if os.environ.get(k) != v]
        removed = [f"{k}=" for k in unset if k in os.environ]
        print("+ " + " ".join([*removed, *added, shown(argv)]), flush=True)
        if self.dry_run:
            return 0
        environ = {k: v for k, v in {**os.environ, **(env or {})}.items() if k not in unset}
        process = subprocess.Popen(
            [os.fspath(a) for a in argv], cwd=ROOT, env=environ, stdout=subprocess.DEVNULL if quiet else None
        )
        while True:
            try:
                return process.wait()
            except KeyboardInterrupt:  # the child got Ctrl-C too: let it finish its own way
                continue


def _digest(level: str) -> str:
    data = hashlib.sha256()
    for name in SETUP_INPUTS[level]:
        path = ROOT / name
        data.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"missing") + b"\0")
    return data.hexdigest()


def installed_level(venv: Path | None = None) -> str | None:
    """The install level whose inputs have not changed since .venv got it, or None."""
    venv = VENV if venv is None else venv
    try:
        stamp = json.loads((venv / STAMP_NAME).read_text())
        level = stamp["level"]
        fresh = level in LEVELS and stamp["inputs"] == _digest(level)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return level if fresh and venv_python(venv).exists() else None


def is_set_up(level: str, venv: Path | None = None) -> bool:
    """True when .venv holds ``level`` (or more) installed from the current inputs."""
    have = installed_level(venv)
    return have is not None and LEVELS.index(have) >= LEVELS.index(level)


def setup(run: Runner, level: str = "lab", offline: bool = False, say_done: bool = False) -> int:
    """Create .venv if needed and install ``level`` into it, unless already done (``say_done``:
    say so in one line); return the status."""
    if is_set_up(level):
        if say_done:
            print(f"setup: .venv holds the {installed_level()} install and its inputs have not changed")
        return 0
    python = venv_python()
    steps: list[tuple[list, bool]] = []
    if not python.exists():
        if sys.version_info[:2] not in SUPPORTED:
            print(
                f"course.py: Python {sys.version.split()[0]} is not supported: the course runs on "
                f"{SUPPORTED_TEXT}. Run this file with one of those (e.g. PYTHON=python3.11 make setup)."
            )
            return 2
        steps.append(([sys.executable, "-m", "venv", VENV], False))
    install = [python, "-m", "tools.install", "setup"]
    install += (["--dev"] if level == "dev" else []) + (["--offline"] if offline else [])
    kernel = ["-m", "ipykernel", "install", "--sys-prefix", "--name", KERNEL]
    kernel += ["--display-name", f"Python ({KERNEL})"]
    steps += [
        (install, False),
        ([python, *kernel], True),  # its one line names a path under .venv: not shown
        ([python, "-c", "import matplotlib.pyplot"], False),  # warms matplotlib's font cache
    ]
    for argv, quiet in steps:
        status = run(argv, quiet=quiet)
        if status:
            return status
    if not run.dry_run:
        (VENV / STAMP_NAME).write_text(json.dumps({"level": level, "inputs": _digest(level)}) + "\n")
    return 0


# The test tiers: which tests each test command runs (the one place that says so; the root
# conftest.py takes CHECK from here, so `python -m pytest` alone runs the check tier). A tier is
# one or two pytest passes: the tests in parallel, then the tests marked `timing` (they assert
# on wall-clock time) alone in one process, so that no other test competes with their clocks.
NOT_RELEASE = "not spawn and not forkserver and not release"
CHECK = f"not course and not timing and {NOT_RELEASE}"
COURSE = f"not timing and {NOT_RELEASE}"
TIMING = f"timing and {NOT_RELEASE}"
RELEASE = "spawn or forkserver or release"
RECORDED_ON = ("linux", (3, 11))  # where stored notebook outputs are compared (conftest.py)
# Work units (a test module, a notebook) go out longest first, by their last measured time
# (conftest.py); a third process keeps 2 cores busy while kernels start and workers sleep. A
# fourth did not pay: fresh clones' passes took 348-361 s with four, 322-351 s with three.
UNITS = ["--dist", "loadscope", "--no-loadscope-reorder"]
KEEP_BYTECODE = ("PYTHONDONTWRITEBYTECODE",)


def compare_outputs(platform: str | None = None, version: tuple[int, int] | None = None) -> bool:
    """True where stored notebook outputs are compared: the platform they were recorded on."""
    platform = sys.platform if platform is None else platform
    version = (sys.version_info[0], sys.version_info[1]) if version is None else version
    return platform.startswith(RECORDED_ON[0]) and version == RECORDED_ON[1]


def tier(name: str) -> list[tuple[dict[str, str], list[str]]]:
    """The pytest passes of the test tier ``name``: (extra environment, pytest arguments) each,
    run one after the other from the repository root."""
    serial = ["-p", "no:xdist"]  # one process: nothing else runs beside a timing test
    tiers: dict[str, list[tuple[dict[str, str], list[str]]]] = {
        "check": [({}, ["-n", "2", "-m", CHECK, "--durations=5", "tests"])],
        "test": [
            (
                {"LOADERLAB_BUDGET_SECONDS": "90"},
                ["-n", "3", *UNITS, "-m", COURSE, "--durations=10", "tests", "notebooks", "solutions"],
            ),
            ({}, [*serial, "-m", TIMING, "--durations=5", "tests"]),
        ],
        "test-spawn": [
            (
                {},
                ["-n", "2", "--dist", "load", "-m", f"({RELEASE}) and not timing", "--durations=8", "tests"],
            ),
            ({}, [*serial, "-m", f"({RELEASE}) and timing", "tests"]),
        ],
        "unit": [({}, ["-n", "2", *UNITS, "-m", COURSE, "tests"]), ({}, [*serial, "-m", TIMING, "tests"])],
        "notebooks": [({}, ["-m", COURSE, "notebooks", "solutions"])],
    }
    if name not in tiers:
        raise LookupError(f"no test tier {name!r} (the tiers: {', '.join(tiers)})")
    return tiers[name]


def lint(run: Runner, python: Path) -> int:
    """ruff over the code, tests and notebooks, and its formatter over the package, tools and tests;
    mypy over the package and the tools; the import
    contracts of the package's layers (pyproject.toml says what each checks); the GitHub workflow
    against GitHub's schema (check-jsonschema's copy); the first failure's status (each runs)."""
    steps: list[list[str | os.PathLike]] = [
        [python, "-m", "ruff", "check", *LINT_PATHS],
        [python, "-m", "ruff", "format", "--check", "--force-exclude", *FORMATTED],
        [python, "-m", "mypy"],
        [python.with_name("lint-imports.exe" if sys.platform == "win32" else "lint-imports"), "--no-cache"],
        [python, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", *WORKFLOWS],
    ]
    return next((status for status in [run(step) for step in steps] if status), 0)


# One core's worth of pure-Python work that ends by itself after `seconds`, however it is left.
BUSY_LOOP = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def busy_core(seconds: float) -> subprocess.Popen:
    """Start and return a process that keeps one core busy for at most ``seconds`` (``--load``:
    a machine shared with another job)."""
    return subprocess.Popen([sys.executable, "-c", BUSY_LOOP.format(seconds=float(seconds))])


def test(run: Runner, name: str, extra: Sequence[str], load: bool = False) -> int:
    """``_test`` below, with one core kept busy meanwhile when ``load`` (the loop ends with it)."""
    if not load or run.dry_run:
        return _test(run, name, extra)
    print("+ one core kept busy by a background loop meanwhile", flush=True)
    loop = busy_core(3600)
    try:
        return _test(run, name, extra)
    finally:
        loop.kill()
        loop.wait()


def _test(run: Runner, name: str, extra: Sequence[str]) -> int:
    """Lint (for `test` and `check`), then each pytest pass of the tier; the first failure's
    status (every pass runs: one report holds every failure). A pass that selects no test
    (pytest's status 5, e.g. no timing test among those named) is no failure."""
    python = venv_python()
    try:
        passes = tier(name)
    except LookupError as exc:
        print(f"course.py {name}: {exc}")
        return 2
    if name in ("test", "check"):
        status = lint(run, python)
        if status:
            return status
    # Bytecode is written for the course's own modules (the package, the tools, the tests as
    # pytest rewrites them) even where PYTHONDONTWRITEBYTECODE is set: compiling them again in
    # every pytest process and every subprocess a test starts costs ~2 s each (closing note #39).
    statuses = [
        run([python, "-m", "pytest", *args, *extra], env=env, unset=KEEP_BYTECODE) for env, args in passes
    ]
    return next((s for s in statuses if s not in (0, 5)), 0)


def clean(run: Runner) -> int:
    for name in (".venv", "site", ".pytest_cache"):
        print(f"+ remove {name}")
        if not run.dry_run:
            shutil.rmtree(ROOT / name, ignore_errors=True)
    return 0


LEARNER_COMMANDS = ("setup", "lab", "preflight", "wheelhouse", "clean")


def student_bundle(root: Path = ROOT) -> bool:
    """True in the students' zip (``make student``): it has no tests/, so only the learner commands
    are offered."""
    return not (root / "tests").is_dir()


def main(argv: Sequence[str] | None = None) -> int:
    student = student_bundle()
    offered = {k: v for k, v in COMMANDS.items() if k in LEARNER_COMMANDS or not student}
    parser = argparse.ArgumentParser(
        prog="python tools/course.py",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__.split("\n\n")[0],
        epilog="commands:\n" + "\n".join(f"  {name:<14} {text}" for name, (_, text) in offered.items()),
    )
    parser.add_argument("command", metavar="command", help="one of the commands below")
    parser.add_argument("-n", "--dry-run", action="store_true", help="print the commands, run nothing")
    parser.add_argument("--offline", action="store_true", help="setup/lab: install from wheelhouse/ only")
    parser.add_argument("--check", action="store_true", help="labs, claims: only check they are current")
    parser.add_argument("--runs", type=int, default=3, help="soak: how many runs (default 3)")
    parser.add_argument(
        "--load", action="store_true", help="soak and the test tiers: keep one core busy meanwhile"
    )
    args, extra = parser.parse_known_args(argv)
    run = Runner(args.dry_run)
    command = args.command
    if command not in offered:
        why = (
            " is a maintainer's command: this student copy of the course has no tests/ or solutions/"
            if command in COMMANDS
            else f": no such command; choose from {', '.join(offered)}"
        )
        print(f"course.py {command}{why}", file=sys.stderr)
        return 2
    level = COMMANDS[command][0]
    python = venv_python()

    if command == "clean":
        return clean(run)
    if command == "student":
        return run([sys.executable, "tools/make_student.py", *extra])
    if command == "claims":  # standard library only: the notebooks' stored outputs, no kernel
        return run(
            [
                python if python.exists() else sys.executable,
                "tools/claims.py",
                *(["--check"] if args.check else []),
                *extra,
            ]
        )
    if command == "preflight":  # no setup: before it, preflight checks what the standard library can
        return run([python if python.exists() else sys.executable, "tools/preflight.py", *extra])
    if level is not None:
        status = setup(run, level, offline=args.offline, say_done=command == "setup")
        if status or command == "setup":
            return status
    if command == "lab":  # notebooks choose their own matplotlib backend (inline)
        return run([python, "-m", "tools.lab_server", *extra], unset=["MPLBACKEND"])
    if command == "wheelhouse":
        return run([python, "-m", "tools.wheelhouse", *extra])
    if command in TEST_TIERS:
        return test(run, command, extra, load=args.load)
    if command == "test-machines":
        if not (ROOT / "tools" / "machines.py").is_file():
            print("course.py test-machines: tools/machines.py is not in this checkout yet")
            return 2
        return run([python, "-m", "tools.machines", *extra])
    if command == "execute":
        return run([python, "-m", "tools.execute_notebooks", *extra])
    if command == "record":
        return run([python, "-m", "tools.record", *extra])
    if command == "labs":
        return run([python, "-m", "tools.make_labs", *(["--check"] if args.check else []), *extra])
    if command == "html":
        return run([python, "-m", "tools.build_site", *extra])
    if command == "soak":
        load = ["--load"] if args.load else []
        return run([python, "-m", "tools.soak", "--runs", str(args.runs), *load, *extra])
    if command == "lint":
        return lint(run, python)
    raise AssertionError(command)


if __name__ == "__main__":
    sys.exit(main())
