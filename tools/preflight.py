"""``make preflight`` (``python tools/preflight.py``): is this machine ready for the course?

Runs with the standard library alone, so it can diagnose a machine where nothing is installed
yet: Python and its ``venv``/``ensurepip``, the OS and CPU type torch ships wheels for, usable
cores, RAM, free disk, and whether the package index answers. Run with the course's environment
(``make preflight`` after ``make setup``), it adds the deep checks: torch's build, /dev/shm, the
start method, the Jupyter kernel, JupyterLab serving the course, and one 2-worker epoch.

One line per check, each failure with a one-line fix; exit 1 when a check fails, 0 otherwise
(warnings do not fail). ``--skip lab,loader`` leaves out the slow checks. Under a minute.
The readers (``shm_usage``, ``kernel_specs``, ``memory``, ...) are functions, so tests can replace them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import platform
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str, path: Path | None = None):
    """Import tools/<name>.py (or ``path``) by path: modules of the standard library only."""
    spec = importlib.util.spec_from_file_location(name, path or ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None, name
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


course, install = _tool("course"), _tool("install")
reports = _tool("preflight_report")  # the JSON a student sends, the instructor's table of them
KERNEL = course.KERNEL
kernel_specs = course.kernel_specs  # registered Jupyter kernels: name -> the argv that starts them
START_NOTEBOOK = "notebooks/00_start_here.ipynb"
GiB, MiB = 2**30, 2**20
MIN_SHM, MIN_RAM_FREE, MIN_CORES = 512 * MiB, 1.5 * GiB, 2
# free disk: before setup the install needs room for .venv (1.1 GB, 1.3 GB with the dev tools)
# and pip's downloads; after it, room for the notebooks' temporary files
MIN_DISK_BEFORE, MIN_DISK_AFTER = 3 * GiB, 1 * GiB
# what the course needs free: the largest peak memory tools/record.py measured for a notebook
# (its kernel and workers: docs/peak_memory.json, MB), plus this margin for JupyterLab's server
# and the browser tab showing the notebook (about 0.5 GB together) and the OS's file cache
PEAK_MEMORY, PEAK_MARGIN = ROOT / "docs" / "peak_memory.json", 1 * GiB
LAB_START_S, LOADER_TIMEOUT_S = 45, 20
OK, WARN, FAIL = "ok", "warn", "fail"
MARKS = {OK: "✅", WARN: "⚠️ ", FAIL: "❌"}
# (sys.platform, machine) pairs torch 2.13 ships wheels for (Linux: manylinux x86-64 and aarch64;
# macOS: Apple silicon only, Intel Macs have had none since torch 2.3; Windows: x86-64)
TORCH_WHEELS = {("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "arm64"), ("win32", "amd64")}
DEEP_MODULES = ("torch", "psutil", "jupyter_client")


class Result(tuple):
    """(status, detail, fix): ``fix`` is shown only when the check did not pass."""

    def __new__(cls, status: str, detail: str, fix: str = ""):
        return super().__new__(cls, (status, detail, fix))


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def installed() -> bool:
    """True when this Python has the course installed (torch, psutil, Jupyter): the deep checks run."""
    return all(importlib.util.find_spec(name) is not None for name in DEEP_MODULES)


# ---- readers (replaced in tests) ----------------------------------------------------------
def shm_usage():
    """Disk usage of /dev/shm (total, used, free), or None where there is none (macOS, Windows)."""
    return shutil.disk_usage("/dev/shm") if os.path.isdir("/dev/shm") else None


def memory() -> tuple[int | None, int | None]:
    """(total, available) bytes of RAM from the standard library; None where it cannot tell."""
    if sys.platform == "win32":
        import ctypes

        class Status(ctypes.Structure):
            _fields_ = [
                ("length", ctypes.c_ulong),
                ("load", ctypes.c_ulong),
                ("total", ctypes.c_ulonglong),
                ("available", ctypes.c_ulonglong),
                *[(f"x{i}", ctypes.c_ulonglong) for i in range(5)],
            ]

        status = Status()
        status.length = ctypes.sizeof(Status)
        if ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):
            return status.total, status.available
        return None, None
    try:  # Linux
        fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        return int(fields["MemTotal"].split()[0]) * 1024, int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        pass
    try:  # macOS and other Unixes: the total only
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), None
    except (AttributeError, OSError, ValueError):
        return None, None


def recorded_peaks() -> dict[str, float]:
    """Measured peak memory (MB) per notebook, from docs/peak_memory.json; {} without it."""
    try:
        peaks = json.loads(PEAK_MEMORY.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(peaks, dict):
        return {}
    return {name: mb for name, mb in peaks.items() if isinstance(mb, (int, float))}


def machine() -> tuple[str, str]:
    """(sys.platform, the CPU type in lower case: 'x86_64', 'arm64', 'amd64', ...)."""
    return sys.platform, platform.machine().lower()


def index_url() -> str:
    """The package index pip uses: PIP_INDEX_URL, else PyPI."""
    configured = os.environ.get("PIP_INDEX_URL", "").split()
    return configured[0] if configured else "https://pypi.org/simple"


# ---- checks: each returns a Result --------------------------------------------------------
def check_python(info: Sequence[int] = sys.version_info) -> Result:  # type: ignore[assignment]
    version = ".".join(map(str, info[:3]))
    if tuple(info[:2]) not in course.SUPPORTED:
        return Result(
            FAIL,
            f"Python {version}: the course runs on {course.SUPPORTED_TEXT}",
            "install Python 3.11 (python.org, or your package manager), then run "
            "`PYTHON=python3.11 make setup` (Windows: `py -3.11 tools/course.py setup`)",
        )
    note = "" if tuple(info[:2]) == (3, 11) else " (outputs were recorded with 3.11: compared only there)"
    return Result(OK, f"Python {version}{note}")


def check_venv() -> Result:
    """The standard library's venv and ensurepip, which `make setup` needs to create .venv."""
    missing = [name for name in ("venv", "ensurepip") if importlib.util.find_spec(name) is None]
    if sys.prefix != sys.base_prefix or os.environ.get("CONDA_PREFIX"):
        return Result(OK, f"running in a virtual environment: {_where()}")
    if missing:
        return Result(
            FAIL,
            f"this Python lacks {' and '.join(missing)}, so it cannot create .venv",
            "Debian/Ubuntu: `sudo apt install python3-venv`; elsewhere install Python from python.org",
        )
    return Result(OK, "venv and ensurepip are there: `make setup` can create .venv")


def check_platform() -> Result:
    system, cpu = machine()
    name = f"{platform.system() or system} on {cpu or 'an unknown CPU'}"
    if (system, cpu) in TORCH_WHEELS or (system.startswith("linux") and ("linux", cpu) in TORCH_WHEELS):
        return Result(OK, f"{name}: torch 2.13 has wheels for it")
    if system == "darwin":
        return Result(
            FAIL,
            f"{name}: torch has no wheels for Intel Macs since 2.3",
            "use Colab or a Linux machine (docs/install.md)",
        )
    return Result(
        FAIL,
        f"{name}: torch 2.13 ships no wheel for this OS and CPU type",
        "use Colab, WSL2 or a Linux/macOS (Apple silicon)/Windows x86-64 machine (docs/install.md)",
    )


def check_env() -> Result:
    """The deep checks' Python is an environment (the course's .venv, or conda's)."""
    if sys.prefix == sys.base_prefix and not os.environ.get("CONDA_PREFIX"):
        return Result(
            FAIL,
            f"{sys.executable} is not in a virtual environment",
            "run `make setup`, then `make preflight` (it uses .venv's Python)",
        )
    return Result(OK, f"environment: {_where()}")


def _where() -> str:
    return "the course's .venv" if Path(sys.prefix).resolve() == (ROOT / ".venv").resolve() else sys.prefix


def check_torch() -> Result:
    try:
        import torch
    except Exception as exc:  # a broken wheel raises OSError/ImportError
        return Result(
            FAIL,
            f"torch does not import: {type(exc).__name__}: {exc}".splitlines()[0],
            "`make clean setup` reinstalls it",
        )
    site = Path(torch.__file__).resolve().parent.parent
    size = sum(_size(p) for p in [site / "torch", *site.glob("nvidia*"), *site.glob("triton")] if p.is_dir())
    build = f"CUDA {torch.version.cuda} build" if torch.version.cuda else "CPU build"
    detail = f"torch {torch.__version__}, {build}, {size / GiB:.1f} GB on disk"
    if torch.version.cuda:
        return Result(
            WARN,
            detail + " (the course needs only the CPU build)",
            "fine if you want CUDA; for the 0.2 GB CPU build: `make clean setup` (Linux takes it "
            "from PyTorch's CPU index)",
        )
    return Result(OK, detail)


def usable_cores() -> int:
    """loaderlab.cores.usable_cores (standard library only), imported by path when first asked."""
    return _tool("cores", ROOT / "loaderlab" / "cores.py").usable_cores()


def check_cores() -> Result:
    cores, logical = usable_cores(), os.cpu_count()
    detail = f"{cores} usable cores ({logical} logical)"
    if cores < MIN_CORES:
        return Result(
            FAIL,
            detail + f"; the measurements need at least {MIN_CORES}",
            f"give the VM or container {MIN_CORES} CPUs or more (e.g. docker run --cpus={MIN_CORES})",
        )
    return Result(OK, detail)


def check_ram() -> Result:
    total, available = memory()
    if total is None:
        return Result(WARN, "RAM not measured here", "make sure 4 GB or more are free before the course")
    if available is None:
        return Result(OK, f"{total / GiB:.1f} GB RAM (the free part is not measured here)")
    detail = f"{total / GiB:.1f} GB RAM, {available / GiB:.1f} GB available"
    if available < MIN_RAM_FREE:
        return Result(
            FAIL,
            detail + f" (the course needs {MIN_RAM_FREE / GiB:.1f} GB free)",
            "close other programs (browser tabs, IDEs) or use a machine with 4 GB or more",
        )
    peaks = recorded_peaks()
    if peaks:  # below its minimum the course cannot run; below this, its heaviest notebook may not
        name, peak = max(peaks.items(), key=lambda item: item[1])
        need = peak * MiB + PEAK_MARGIN
        if available < need:
            return Result(
                WARN,
                detail + f", below the {need / GiB:.1f} GB the heaviest notebook needs ("
                f"{Path(name).stem} peaks at {peak:.0f} MB, plus {PEAK_MARGIN / GiB:.0f} GB for "
                "JupyterLab and its browser tab)",
                f"close other programs (browser tabs, IDEs) before {Path(name).stem}, or run it on a "
                "machine with more free memory",
            )
    return Result(OK, detail)


def check_disk() -> Result:
    free = shutil.disk_usage(ROOT).free
    need = MIN_DISK_AFTER if installed() else MIN_DISK_BEFORE
    if free < need:
        return Result(
            FAIL,
            f"{free / GiB:.1f} GB free on the course's disk (needs {need / GiB:.0f} GB)",
            "free some space (`pip cache purge` frees pip's downloads)",
        )
    return Result(OK, f"{free / GiB:.0f} GB free on the course's disk")


def check_index() -> Result:
    """The package index answers (bounded: a firewall that drops packets cannot hang it); on
    Linux also PyTorch's CPU index, without which setup stops rather than fetch the CUDA build."""
    if any((ROOT / "wheelhouse").glob("torch-*.whl")):
        return Result(OK, "wheelhouse/ holds torch: `make lab OFFLINE=1` needs no network")
    index = index_url()
    if not install.answers(index, project="pip"):
        return Result(
            FAIL,
            f"the package index {index} did not answer within {install.PROBE_SECONDS:.0f} s",
            "check the network or proxy (pip honours HTTPS_PROXY), or install from a wheelhouse "
            "(`make lab OFFLINE=1`, docs/install.md)",
        )
    torch_index = install.torch_index()
    if torch_index and not install.answers(torch_index):
        return Result(
            WARN,
            f"{index} answers; PyTorch's CPU index {torch_index} does not",
            "`make setup` stops unless your index serves torch's CPU build: retry later, or see "
            "docs/install.md (TORCH_INDEX, a wheelhouse)",
        )
    return Result(OK, f"{index} answers" + (f", and so does {torch_index}" if torch_index else ""))


def check_shm() -> Result:
    usage = shm_usage()
    if usage is None:
        return Result(OK, "no /dev/shm here (macOS/Windows): workers share memory another way")
    detail = f"/dev/shm {usage.total / MiB:,.0f} MB, {usage.free / MiB:,.0f} MB free"
    if usage.total < MIN_SHM or usage.free < MIN_SHM / 2:
        return Result(
            FAIL,
            detail + f": too small, workers' batches fail with 'Bus error' (needs {MIN_SHM // MiB} MB)",
            "docker run --shm-size=1g (or --ipc=host); elsewhere: sudo mount -o remount,size=1G /dev/shm",
        )
    return Result(OK, detail)


def start_method() -> str:
    """The start method new workers get (loaderlab.processes.configured_start_method). Only the
    checks after setup ask, so loaderlab (psutil) is importable here."""
    from loaderlab.processes import configured_start_method

    return configured_start_method()


def check_start_method() -> Result:
    method, available = start_method(), multiprocessing.get_all_start_methods()
    if method not in available:
        return Result(
            FAIL,
            f"LOADERLAB_START_METHOD={method!r} is not available here",
            f"unset it or choose one of {', '.join(available)}",
        )
    why = {"fork": "Linux's default", "spawn": "as on macOS/Windows: workers import your code, notebook 12"}
    return Result(OK, f"workers start with {method} ({why.get(method, 'torch preloaded by the course')})")


def check_kernel() -> Result:
    fix = (
        f".venv/bin/python -m ipykernel install --sys-prefix --name {KERNEL} "
        f'--display-name "Python ({KERNEL})"'
    )
    try:
        specs = kernel_specs()
    except Exception as exc:
        return Result(FAIL, f"cannot list Jupyter kernels ({type(exc).__name__}: {exc})".splitlines()[0], fix)
    if KERNEL not in specs:
        return Result(
            FAIL,
            f"Jupyter kernel {KERNEL!r} is not registered (found: {', '.join(sorted(specs)) or 'none'})",
            fix,
        )
    python = (specs[KERNEL] or ["?"])[0]
    # the same environment: the same bin folder (python and python3 there are links to one file,
    # and every environment's python links to its base interpreter, so the files cannot tell)
    if os.path.isabs(python) and Path(python).parent.resolve() != Path(sys.executable).parent.resolve():
        return Result(FAIL, f"kernel {KERNEL!r} runs {python}, not this environment's Python", fix)
    return Result(OK, f"Jupyter kernel {KERNEL!r} runs this environment's Python")


def _lab_server():
    spec = importlib.util.spec_from_file_location("lab_server", ROOT / "tools" / "lab_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_lab() -> Result:
    """JupyterLab starts (tools/lab_server.py, as `make lab`), serves the course with the
    classroom settings, and stops leaving no process."""
    fix = (
        "`make clean setup` reinstalls JupyterLab and the course's settings (jupyter/); "
        "`make lab` shows its log"
    )
    if not (ROOT / "tools" / "lab_server.py").is_file():
        return Result(FAIL, "tools/lab_server.py is missing: run preflight from the course folder", fix)
    problems, start = [], time.monotonic()
    try:
        with _lab_server().started(timeout=LAB_START_S) as request:
            seconds = time.monotonic() - start
            if request(f"/api/contents/{START_NOTEBOOK}?content=0")[0] != 200:
                problems.append(f"it does not serve {START_NOTEBOOK}")
            default = json.loads(request("/api/kernelspecs")[1] or b"{}").get("default")
            if default != KERNEL:
                problems.append(f"its default kernel is {default!r}, not {KERNEL!r}")
            notes = json.loads(
                request("/lab/api/settings/@jupyterlab/apputils-extension:notification")[1] or b"{}"
            )
            news = notes.get("schema", {}).get("properties", {}).get("fetchNews", {}).get("default")
            if notes.get("settings", {}).get("fetchNews", news) != "false":  # overrides set the default
                problems.append("the Jupyter news pop-up is on (jupyter/overrides.json is not installed)")
    except RuntimeError as exc:
        problems.append(str(exc))
    if problems:
        return Result(FAIL, "JupyterLab: " + "; ".join(problems), fix)
    return Result(
        OK,
        f"JupyterLab started in {seconds:.0f} s, served the course (kernel {KERNEL}, no news pop-up), "
        "stopped",
    )


def check_loader() -> Result:
    """One epoch of a 2-worker DataLoader, every batch bounded by ``LOADER_TIMEOUT_S``."""
    import psutil

    try:
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        method = start_method() if start_method() in multiprocessing.get_all_start_methods() else None
        before, start = {p.pid for p in psutil.Process().children()}, time.monotonic()
        loader = DataLoader(
            TensorDataset(torch.arange(64.0)),
            batch_size=8,
            num_workers=2,
            timeout=LOADER_TIMEOUT_S,
            multiprocessing_context=method,
        )
        total = sum(float(xb.sum()) for (xb,) in loader)
        seconds = time.monotonic() - start
        del loader
    except Exception as exc:
        return Result(
            FAIL,
            f"a 2-worker DataLoader epoch failed: {type(exc).__name__}: {exc}".splitlines()[0][:200],
            "run `make preflight` again; if it fails twice, check /dev/shm and the start method above",
        )
    if total != sum(range(64)):
        return Result(
            FAIL, f"a 2-worker DataLoader epoch summed to {total}, not {sum(range(64))}", "`make clean setup`"
        )
    from loaderlab.processes import is_multiprocessing_helper

    me = os.getpid()
    new = [
        p for p in psutil.Process().children() if p.pid not in before and not is_multiprocessing_helper(p, me)
    ]
    _, left = psutil.wait_procs(new, timeout=5)
    if left:
        return Result(FAIL, f"{len(left)} worker processes outlived the epoch", "report it to the instructor")
    return Result(
        OK,
        f"a 2-worker DataLoader epoch ({method or multiprocessing.get_start_method()}) "
        f"ran in {seconds:.1f} s",
    )


CHECKS: dict[str, Callable[[], Result]] = {
    "python": check_python,
    "venv": check_venv,
    "platform": check_platform,
    "index": check_index,
    "env": check_env,
    "torch": check_torch,
    "cores": check_cores,
    "ram": check_ram,
    "disk": check_disk,
    "shm": check_shm,
    "start": check_start_method,
    "kernel": check_kernel,
    "lab": check_lab,
    "loader": check_loader,
}
# before setup: what the standard library can tell; after it, in the course's environment, the rest
BEFORE_SETUP = ("python", "venv", "platform", "cores", "ram", "disk", "index")
AFTER_SETUP = (
    "python",
    "env",
    "platform",
    "torch",
    "cores",
    "ram",
    "disk",
    "shm",
    "start",
    "kernel",
    "lab",
    "loader",
)


def run(
    skip: Sequence[str] = (), deep: bool | None = None, report: Path | None = None, name: str = ""
) -> int:
    """Run the checks of this phase (``deep``: after setup; default: whether the course is
    installed in this Python) not in ``skip``, print one line each; write them to ``report`` (a
    JSON file a student sends, tools/preflight_report.py) when given; return the exit status."""
    failed = warned = 0
    start = time.monotonic()
    deep = installed() if deep is None else deep
    results: list[tuple[str, str, str, str]] = []
    for check_name in AFTER_SETUP if deep else BEFORE_SETUP:
        check = CHECKS.get(check_name)
        if check is None or check_name in skip:
            continue
        try:
            status, detail, fix = check()
        except Exception as exc:  # a check's own bug: one line, not a traceback
            status, detail, fix = (
                FAIL,
                f"the check itself failed: {type(exc).__name__}: {exc}",
                "report it to the instructor",
            )
        failed += status == FAIL
        warned += status == WARN
        results.append((check_name, status, detail, fix if status != OK else ""))
        print(
            f"{MARKS[status]} {check_name:<7} {detail}" + (f" — fix: {fix}" if status != OK else ""),
            flush=True,
        )
    if failed:
        verdict = f"{failed} check(s) failed: fix them and run `make preflight` again"
    elif deep:
        verdict = "ready for the course"
    else:
        verdict = (
            "ready to install: run `make lab` (Windows: `py tools/course.py lab`); after setup, "
            "`make preflight` also checks torch, the kernel, JupyterLab and a 2-worker epoch"
        )
    print(f"preflight: {verdict} ({warned} warning(s), {time.monotonic() - start:.0f} s)")
    if report is not None:
        reports.write(report, results, deep, machine_facts(), name)
        print(f"preflight: report written to {report.name}: send this file to your instructor")
    return 1 if failed else 0


def machine_facts() -> dict:
    """The machine, for the report: OS, Python, CPU type, usable cores, RAM, free disk."""
    total, available = memory()
    return {
        "os": f"{platform.system()} {platform.release()}",
        "platform": sys.platform,
        "machine": machine()[1],
        "python": platform.python_version(),
        "cores": usable_cores(),
        "ram_total_gb": round(total / GiB, 1) if total else None,
        "ram_available_gb": round(available / GiB, 1) if available else None,
        "disk_free_gb": round(shutil.disk_usage(ROOT).free / GiB, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/preflight.py", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--skip", default="", help=f"checks to leave out, comma-separated: {','.join(CHECKS)}"
    )
    parser.add_argument(
        "--report", metavar="FILE", help="also write what it found to FILE (JSON), to send to the instructor"
    )
    parser.add_argument("--name", default="", help="your name in the report (default: your user name)")
    parser.add_argument(
        "--summarise",
        metavar="FOLDER",
        help="instructors: one table of the reports in FOLDER (who is ready, who needs what); runs no check",
    )
    args = parser.parse_args(argv)
    if args.summarise:
        folder = Path(args.summarise)
        if not folder.is_dir():
            print(f"preflight: --summarise {args.summarise}: no such folder", file=sys.stderr)
            return 2
        print(reports.summarise(folder))
        return 0
    report = Path(args.report) if args.report else None
    if report is not None and (report.is_dir() or not report.resolve().parent.is_dir()):
        print(f"preflight: --report {args.report}: not a file in an existing folder", file=sys.stderr)
        return 2
    skip = [name for name in args.skip.split(",") if name]
    unknown = [name for name in skip if name not in CHECKS]
    if unknown:
        print(f"preflight: unknown check {unknown[0]!r}; choose from {', '.join(CHECKS)}", file=sys.stderr)
        return 2
    return run(skip, report=report, name=args.name)


if __name__ == "__main__":
    sys.exit(main())
