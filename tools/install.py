"""Install the course into the running Python (`make setup`) or fill a wheelhouse (`make wheelhouse`).

Standard library only: `make setup` runs it with the fresh virtual environment's Python.

- ``setup``: on Linux, torch's CPU build comes from PyTorch's own CPU wheel index (about 190 MB;
  the default index serves Linux the CUDA build, about 2.7 GB with its NVIDIA libraries). When
  that index does not answer within a few seconds, or its install fails, the default index is
  used. Then requirements.txt, the package (editable) and the classroom JupyterLab settings
  (jupyter/, see its README).
  ``TORCH_INDEX=URL`` uses another index for torch (e.g. a CUDA one or a local mirror);
  ``TORCH_INDEX=default`` uses the default index (pip's, with your pip configuration).
- ``setup --offline``: everything from ``wheelhouse/`` with no network (pip --no-index).
- ``wheelhouse``: downloads every wheel the course needs (torch's CPU build where the index
  answers) into ``wheelhouse/``, for this machine's OS, CPU type and Python version.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
INDEX_VARIABLE = "TORCH_INDEX"
PROBE_SECONDS = 5.0
WHEELHOUSE = ROOT / "wheelhouse"
QUIET = ["--disable-pip-version-check", "-q"]
# repository file -> where it goes under the environment's prefix (sys.prefix)
LAB_SETTINGS = {
    "jupyter/overrides.json": "share/jupyter/lab/settings/overrides.json",
    # the .d folder next to it is read for extensions only: the main file holds this setting
    "jupyter/jupyter_server_config.json": "etc/jupyter/jupyter_server_config.json",
}


def torch_index(environ=os.environ, platform: str = sys.platform) -> str | None:
    """The index to take torch from first: ``TORCH_INDEX`` if set ('default' or empty: none),
    else PyTorch's CPU index on Linux, else none (macOS and Windows get CPU builds by default)."""
    if INDEX_VARIABLE in environ:
        value = environ[INDEX_VARIABLE].strip()
        return None if value in ("", "default") else value
    return CPU_INDEX if platform.startswith("linux") else None


def answers(index: str, project: str = "torch", timeout: float = PROBE_SECONDS) -> bool:
    """True when ``index`` serves ``project``'s page within ``timeout`` seconds.

    The request runs in a daemon thread, so a name lookup or a firewall that drops packets
    (which urllib's own timeout does not always bound) cannot delay the answer."""
    result: list[bool] = []

    def probe() -> None:
        try:
            with urllib.request.urlopen(f"{index.rstrip('/')}/{project}/", timeout=timeout) as response:
                result.append(response.status == 200)
        except Exception:  # refused, unknown host, timeout, HTTP error: all mean "use another"
            result.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(result and result[0])


def pinned(requirement_file: Path, name: str = "torch") -> str:
    """The line of ``requirement_file`` that pins ``name`` (e.g. 'torch==2.13.0'), or ``name``."""
    for line in requirement_file.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.replace(" ", "").lower().startswith((f"{name}==", f"{name}>", f"{name}<", f"{name}~")):
            return line
    return name


def pip(args: list[str]) -> int:
    """Run this Python's pip with ``args``, echoing the command; return its exit status."""
    command = [sys.executable, "-m", "pip", *args]
    print("+ pip " + " ".join(args), flush=True)
    return subprocess.run(command, cwd=ROOT).returncode


def torch_first(requirements: Path, index: str | None, extra: list[str], action: str = "install") -> bool:
    """Install (or download) torch from ``index`` when it answers; return True if it did.

    False means the default index will serve torch with the rest: printed with the reason."""
    if index is None:
        return False
    start = time.monotonic()
    if not answers(index):
        print(f"{index} did not answer (after {time.monotonic() - start:.1f} s, limit "
              f"{PROBE_SECONDS:.0f} s): torch comes from the default index (on Linux, PyPI "
              "serves the CUDA build, about 2.7 GB)", flush=True)
        return False
    # torch alone (--no-deps): its dependencies come from the default index with the rest, so
    # what the CPU index lacks cannot fail it. --retries 1: a flaky network falls back sooner
    if pip([action, *QUIET, *extra, "--no-deps", "--timeout", "30", "--retries", "1",
            "--index-url", index, pinned(requirements)]) == 0:
        return True
    print(f"torch from {index} failed: it comes from the default index instead", flush=True)
    return False


def install_lab_settings(prefix: Path = Path(sys.prefix)) -> list[Path]:
    """Copy the classroom JupyterLab settings (jupyter/) under ``prefix``; return the targets."""
    targets = []
    for source, target in LAB_SETTINGS.items():
        path = prefix / target
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / source, path)
        targets.append(path)
    return targets


def setup(requirements: Path, offline: bool, wheelhouse: Path, dry_run: bool) -> int:
    """Install torch, the requirements, the package and the JupyterLab settings."""
    extra = ["--dry-run"] if dry_run else []
    if offline:
        if not any(wheelhouse.glob("torch-*.whl")):
            print(f"OFFLINE=1: no torch wheel in {wheelhouse}; fill it with `make wheelhouse` "
                  "on a machine with a network (same OS and Python) and copy it here")
            return 1
        extra += ["--no-index", "--find-links", str(wheelhouse)]
    else:
        torch_first(requirements, torch_index(), extra)
    status = pip(["install", *QUIET, *extra, "-r", str(requirements)])
    if status or dry_run:
        return status
    status = pip(["install", *QUIET, *extra, "--no-deps", "-e", str(ROOT)])
    if status == 0:
        for path in install_lab_settings():
            print(f"JupyterLab settings: {path}")
    return status


def wheelhouse(requirements: Path, dest: Path) -> int:
    """Download every wheel the course needs into ``dest`` (setuptools too: the offline build
    of the editable package needs it)."""
    dest.mkdir(parents=True, exist_ok=True)
    links = ["--dest", str(dest), "--find-links", str(dest)]
    torch_first(requirements, torch_index(), links, action="download")
    status = pip(["download", *QUIET, *links, "-r", str(requirements), "setuptools"])
    files = list(dest.glob("*"))
    size = sum(f.stat().st_size for f in files) / 2**20
    print(f"{dest}: {len(files)} files, {size:,.0f} MiB; `make lab OFFLINE=1` installs from it")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["setup", "wheelhouse"])
    parser.add_argument("--requirements", type=Path, default=ROOT / "requirements.txt")
    parser.add_argument("--wheelhouse", type=Path, default=WHEELHOUSE)
    parser.add_argument("--offline", action="store_true", help="install from --wheelhouse only")
    parser.add_argument("--dry-run", action="store_true",
                        help="resolve (pip --dry-run) without installing; skips the package")
    args = parser.parse_args(argv)
    if args.command == "wheelhouse":
        return wheelhouse(args.requirements, args.wheelhouse)
    return setup(args.requirements, args.offline, args.wheelhouse, args.dry_run)


if __name__ == "__main__":
    sys.exit(main())
