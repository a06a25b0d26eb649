"""``make preflight`` (``python tools/preflight.py``): is this machine ready for the course?

One line per check, each failure with a one-line fix; exit 1 when a check fails, 0 otherwise
(warnings do not fail). ``--skip lab,loader`` leaves out the slow checks. Under a minute.
The readers (``shm_usage``, ``kernel_specs``, ...) are functions, so tests can replace them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from loaderlab.cores import usable_cores  # noqa: E402  (standard library only)

ROOT = Path(__file__).resolve().parent.parent
KERNEL = "loaderlab"
START_NOTEBOOK = "notebooks/00_start_here.ipynb"
GiB, MiB = 2**30, 2**20
MIN_SHM, MIN_RAM_FREE, MIN_DISK_FREE, MIN_CORES = 512 * MiB, 1.5 * GiB, 1 * GiB, 2
LAB_START_S, LOADER_TIMEOUT_S = 45, 20
OK, WARN, FAIL = "ok", "warn", "fail"
MARKS = {OK: "✅", WARN: "⚠️ ", FAIL: "❌"}


class Result(tuple):
    """(status, detail, fix): ``fix`` is shown only when the check did not pass."""

    def __new__(cls, status: str, detail: str, fix: str = ""):
        return super().__new__(cls, (status, detail, fix))


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


# ---- readers (replaced in tests) ----------------------------------------------------------
def shm_usage():
    """psutil's disk usage of /dev/shm, or None where there is none (macOS, Windows)."""
    return psutil.disk_usage("/dev/shm") if os.path.isdir("/dev/shm") else None


def kernel_specs() -> dict[str, list[str]]:
    """Registered Jupyter kernels: name -> the argv that starts them."""
    from jupyter_client.kernelspec import KernelSpecManager

    specs = KernelSpecManager().get_all_specs()
    return {name: spec["spec"].get("argv", []) for name, spec in specs.items()}


# ---- checks: each returns a Result --------------------------------------------------------
def check_python() -> Result:
    version = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info < (3, 10):  # noqa: UP036 (a student may run it with any Python)
        return Result(FAIL, f"Python {version} is older than 3.10", "install Python 3.10-3.13 (3.11 recommended), then `make clean setup`")
    note = "" if sys.version_info[:2] == (3, 11) else " (outputs were recorded with 3.11: they run here, compared only on 3.11)"
    return Result(OK, f"Python {version}{note}")


def check_venv() -> Result:
    if sys.prefix == sys.base_prefix and not os.environ.get("CONDA_PREFIX"):
        return Result(FAIL, f"{sys.executable} is not in a virtual environment",
                      "run `make setup`, then `make preflight` (it uses .venv/bin/python)")
    where = "the course's .venv" if Path(sys.prefix).resolve() == (ROOT / ".venv").resolve() else sys.prefix
    return Result(OK, f"environment: {where}")


def check_torch() -> Result:
    try:
        import torch
    except Exception as exc:  # a broken wheel raises OSError/ImportError
        return Result(FAIL, f"torch does not import: {type(exc).__name__}: {exc}".splitlines()[0],
                      "`make clean setup` reinstalls it")
    site = Path(torch.__file__).resolve().parent.parent
    size = sum(_size(p) for p in [site / "torch", *site.glob("nvidia*"), *site.glob("triton")] if p.is_dir())
    build = f"CUDA {torch.version.cuda} build" if torch.version.cuda else "CPU build"
    detail = f"torch {torch.__version__}, {build}, {size / GiB:.1f} GB on disk"
    if torch.version.cuda:
        return Result(WARN, detail + " (the course needs only the CPU build)",
                      "fine if you want CUDA; for the 0.2 GB CPU build: `make clean setup` (Linux takes it from PyTorch's CPU index)")
    return Result(OK, detail)


def check_cores() -> Result:
    cores, logical = usable_cores(), psutil.cpu_count()
    detail = f"{cores} usable cores ({logical} logical, {psutil.cpu_count(logical=False)} physical)"
    if cores < MIN_CORES:
        return Result(FAIL, detail + f"; the measurements need at least {MIN_CORES}",
                      f"give the VM or container {MIN_CORES} CPUs or more (e.g. docker run --cpus={MIN_CORES})")
    return Result(OK, detail)


def check_ram() -> Result:
    mem = psutil.virtual_memory()
    detail = f"{mem.total / GiB:.1f} GB RAM, {mem.available / GiB:.1f} GB available"
    if mem.available < MIN_RAM_FREE:
        return Result(FAIL, detail + f" (the course needs {MIN_RAM_FREE / GiB:.1f} GB free)",
                      "close other programs (browser tabs, IDEs) or use a machine with 4 GB or more")
    return Result(OK, detail)


def check_disk() -> Result:
    free = psutil.disk_usage(str(ROOT)).free
    if free < MIN_DISK_FREE:
        return Result(FAIL, f"{free / GiB:.1f} GB free on the course's disk (needs {MIN_DISK_FREE / GiB:.0f} GB)",
                      "free some space (`pip cache purge` frees pip's downloads)")
    return Result(OK, f"{free / GiB:.0f} GB free on the course's disk")


def check_shm() -> Result:
    usage = shm_usage()
    if usage is None:
        return Result(OK, "no /dev/shm here (macOS/Windows): workers share memory another way")
    detail = f"/dev/shm {usage.total / MiB:,.0f} MB, {usage.free / MiB:,.0f} MB free"
    if usage.total < MIN_SHM or usage.free < MIN_SHM / 2:
        return Result(FAIL, detail + f": too small, workers' batches fail with 'Bus error' (needs {MIN_SHM // MiB} MB)",
                      "docker run --shm-size=1g (or --ipc=host); elsewhere: sudo mount -o remount,size=1G /dev/shm")
    return Result(OK, detail)


def start_method() -> str:
    """The start method new workers get: LOADERLAB_START_METHOD, else Python's default here."""
    return os.environ.get("LOADERLAB_START_METHOD", "").strip() or multiprocessing.get_start_method()


def check_start_method() -> Result:
    method, available = start_method(), multiprocessing.get_all_start_methods()
    if method not in available:
        return Result(FAIL, f"LOADERLAB_START_METHOD={method!r} is not available here",
                      f"unset it or choose one of {', '.join(available)}")
    why = {"fork": "Linux's default", "spawn": "as on macOS/Windows: workers import your code, notebook 12"}
    return Result(OK, f"workers start with {method} ({why.get(method, 'torch preloaded by the course')})")


def check_kernel() -> Result:
    fix = f".venv/bin/python -m ipykernel install --sys-prefix --name {KERNEL} --display-name \"Python ({KERNEL})\""
    try:
        specs = kernel_specs()
    except Exception as exc:
        return Result(FAIL, f"cannot list Jupyter kernels ({type(exc).__name__}: {exc})".splitlines()[0], fix)
    if KERNEL not in specs:
        return Result(FAIL, f"Jupyter kernel {KERNEL!r} is not registered (found: {', '.join(sorted(specs)) or 'none'})", fix)
    python = (specs[KERNEL] or ["?"])[0]
    if os.path.isabs(python) and os.path.abspath(python) != os.path.abspath(sys.executable):
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
    fix = "`make clean setup` reinstalls JupyterLab and the course's settings (jupyter/); `make lab` shows its log"
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
            notes = json.loads(request("/lab/api/settings/@jupyterlab/apputils-extension:notification")[1] or b"{}")
            news = notes.get("schema", {}).get("properties", {}).get("fetchNews", {}).get("default")
            if notes.get("settings", {}).get("fetchNews", news) != "false":  # overrides set the default
                problems.append("the Jupyter news pop-up is on (jupyter/overrides.json is not installed)")
    except RuntimeError as exc:
        problems.append(str(exc))
    if problems:
        return Result(FAIL, "JupyterLab: " + "; ".join(problems), fix)
    return Result(OK, f"JupyterLab started in {seconds:.0f} s, served the course (kernel {KERNEL}, no news pop-up), stopped")


def _helper(proc: psutil.Process) -> bool:
    """True for multiprocessing's own long-lived helpers (resource tracker, forkserver)."""
    try:
        return any(h in " ".join(proc.cmdline()) for h in ("resource_tracker", "forkserver"))
    except psutil.Error:
        return True  # gone already


def check_loader() -> Result:
    """One epoch of a 2-worker DataLoader, every batch bounded by ``LOADER_TIMEOUT_S``."""
    try:
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        method = start_method() if start_method() in multiprocessing.get_all_start_methods() else None
        before, start = {p.pid for p in psutil.Process().children()}, time.monotonic()
        loader = DataLoader(TensorDataset(torch.arange(64.0)), batch_size=8, num_workers=2,
                            timeout=LOADER_TIMEOUT_S, multiprocessing_context=method)
        total = sum(float(xb.sum()) for (xb,) in loader)
        seconds = time.monotonic() - start
        del loader
    except Exception as exc:
        return Result(FAIL, f"a 2-worker DataLoader epoch failed: {type(exc).__name__}: {exc}".splitlines()[0][:200],
                      "run `make preflight` again; if it fails twice, check /dev/shm and the start method above")
    if total != sum(range(64)):
        return Result(FAIL, f"a 2-worker DataLoader epoch summed to {total}, not {sum(range(64))}", "`make clean setup`")
    new = [p for p in psutil.Process().children() if p.pid not in before and not _helper(p)]
    _, left = psutil.wait_procs(new, timeout=5)
    if left:
        return Result(FAIL, f"{len(left)} worker processes outlived the epoch", "report it to the instructor")
    return Result(OK, f"a 2-worker DataLoader epoch ({method or multiprocessing.get_start_method()}) ran in {seconds:.1f} s")


CHECKS: dict[str, Callable[[], Result]] = {
    "python": check_python, "venv": check_venv, "torch": check_torch, "cores": check_cores,
    "ram": check_ram, "disk": check_disk, "shm": check_shm, "start": check_start_method,
    "kernel": check_kernel, "lab": check_lab, "loader": check_loader,
}


def run(skip: Sequence[str] = ()) -> int:
    """Run every check not in ``skip``, print one line each; return the exit status."""
    failed = warned = 0
    start = time.monotonic()
    for name, check in CHECKS.items():
        if name in skip:
            continue
        try:
            status, detail, fix = check()
        except Exception as exc:  # a check's own bug: one line, not a traceback
            status, detail, fix = FAIL, f"the check itself failed: {type(exc).__name__}: {exc}", "report it to the instructor"
        failed += status == FAIL
        warned += status == WARN
        print(f"{MARKS[status]} {name:<7} {detail}" + (f" — fix: {fix}" if status != OK else ""), flush=True)
    verdict = "ready for the course" if not failed else f"{failed} check(s) failed: fix them and run `make preflight` again"
    print(f"preflight: {verdict} ({warned} warning(s), {time.monotonic() - start:.0f} s)")
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/preflight.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip", default="", help=f"checks to leave out, comma-separated: {','.join(CHECKS)}")
    args = parser.parse_args(argv)
    skip = [name for name in args.skip.split(",") if name]
    unknown = [name for name in skip if name not in CHECKS]
    if unknown:
        print(f"preflight: unknown check {unknown[0]!r}; choose from {', '.join(CHECKS)}", file=sys.stderr)
        return 2
    return run(skip)


if __name__ == "__main__":
    sys.exit(main())
