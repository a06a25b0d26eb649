"""Install the course into the running Python (`make setup`).

Standard library only: tools/course.py runs it (``python -m tools.install setup``) with the fresh
virtual environment's Python. tools/wheelhouse.py fills the wheelhouse that ``--offline`` reads.

- ``setup``: requirements.txt (what the notebooks and labs import), the package (editable) and the
  classroom JupyterLab settings (jupyter/, see its README); ``--dev`` adds requirements-dev.txt
  (the test, lint and site tools). On Linux, torch's CPU build comes from PyTorch's own CPU wheel
  index (about 190 MB; the default index serves Linux the CUDA build, 2.74 GB with its NVIDIA
  libraries). When that index does not answer within a few seconds, the default index is used
  only if it serves a CPU build (a mirror or a local wheel; pip's --dry-run report tells from
  torch's dependencies); otherwise setup stops, installs nothing and says how to retry or opt in.
  A torch that already satisfies the pin is kept.
  ``TORCH_INDEX=URL`` uses another index for torch (e.g. a CUDA one or a local mirror);
  ``TORCH_INDEX=default`` uses the default index (pip's, with your pip configuration), whatever
  build it serves.
- ``setup --offline``: everything from ``wheelhouse/`` with no network (pip --no-index).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
INDEX_VARIABLE = "TORCH_INDEX"
PROBE_SECONDS = 5.0
WHEELHOUSE = ROOT / "wheelhouse"
DEV_REQUIREMENTS = ROOT / "requirements-dev.txt"
CUDA_DOWNLOAD = "2.74 GB"  # torch 2.13.0's CUDA build for Linux with its NVIDIA/CUDA/triton wheels
STOPPED = 3  # setup's exit status when it stops rather than download the CUDA build
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


def default_build(
    requirements: Path, extra: list[str] | None = None, timeout: float = 180.0
) -> tuple[str, str]:
    """Which torch build the default index (pip's configuration, plus ``extra``) would install:
    ('cpu' | 'cuda' | 'unknown', the wheel's name or why unknown).

    pip resolves torch alone with --dry-run and reports the wheel it chose; a build whose
    dependencies name NVIDIA packages is the CUDA one. Only metadata is fetched."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--no-deps",
            "--disable-pip-version-check",
            "-q",
            "--report",
            str(report),
            *(extra or []),
            pinned(requirements),
        ]
        try:
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "unknown", f"pip did not resolve torch within {timeout:.0f} s"
        if done.returncode or not report.is_file():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return "unknown", f"pip could not resolve torch ({last[:160]})"
        chosen = json.loads(report.read_text())["install"][0]
    name = urllib.parse.unquote(chosen["download_info"]["url"].rsplit("/", 1)[-1])
    needs = chosen["metadata"].get("requires_dist", [])
    return ("cuda" if any(d.lower().startswith("nvidia") for d in needs) else "cpu"), name


def resolver_options(extra: list[str]) -> list[str]:
    """The options of ``extra`` that say where pip looks (not --dry-run, not download's --dest)."""
    kept, skip = [], False
    for option in extra:
        if skip:
            skip = False
        elif option == "--dest":
            skip = True
        elif option != "--dry-run":
            kept.append(option)
    return kept


def installed_torch() -> str | None:
    """The version of torch installed in this Python, or None."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def stop_message(index: str, why: str) -> str:
    """What to do when torch's CPU build cannot be had: retry, a mirror, a wheelhouse, or opt in."""
    return (
        f"setup stopped, nothing installed: {why}. The course needs only torch's CPU build "
        f"(about 190 MB); Linux's CUDA build is {CUDA_DOWNLOAD} with its NVIDIA libraries. "
        f"Retry later (`make setup`), or set TORCH_INDEX to a mirror of {index}, or install from a "
        "wheelhouse (`make lab OFFLINE=1`, docs/install.md), or accept the CUDA build: "
        "`TORCH_INDEX=default make setup` (Windows: `set TORCH_INDEX=default`, then "
        "`py tools/course.py setup`)."
    )


def torch_first(requirements: Path, index: str | None, extra: list[str], action: str = "install") -> bool:
    """Take torch from ``index`` when it answers; return False to stop (the reason printed).

    True also when torch comes from the default index with the rest: ``index`` is None (macOS,
    Windows, ``TORCH_INDEX=default``), torch already satisfies the pin, or ``index`` did not
    answer and the default index serves a CPU build."""
    if index is None:
        return True
    pin = pinned(requirements)
    have = installed_torch() if action == "install" else None
    if have and pin.startswith("torch==") and have.split("+")[0] == pin.split("==", 1)[1]:
        print(f"torch {have} is installed already: kept", flush=True)
        return True
    start = time.monotonic()
    if not answers(index):
        waited = (
            f"{index} did not answer (after {time.monotonic() - start:.1f} s, limit {PROBE_SECONDS:.0f} s)"
        )
        build, detail = default_build(requirements, resolver_options(extra))
        if build == "cpu":
            print(f"{waited}: your default index serves a CPU build ({detail}), which is used", flush=True)
            return True
        why = waited + (
            f" and your default index serves the CUDA build ({detail})"
            if build == "cuda"
            else f", and {detail}"
        )
        print(stop_message(index, why), flush=True)
        return False
    # torch alone (--no-deps): its dependencies come from the default index with the rest, so
    # what the CPU index lacks cannot fail it. --retries 1: a flaky network gives up sooner
    if (
        pip(
            [
                action,
                *QUIET,
                *extra,
                "--no-deps",
                "--timeout",
                "30",
                "--retries",
                "1",
                "--index-url",
                index,
                pin,
            ]
        )
        == 0
    ):
        return True
    print(stop_message(index, f"installing {pin} from {index} failed (pip's message is above)"), flush=True)
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


# Python 3.11's bundled pip (23.2) resolves and installs the course in 46 s on 2 cores, this one
# in 22 s (it takes 2 s to install itself): setup installs it first.
PIP = "pip==26.3"


def upgrade_pip(offline: bool, wheelhouse: Path) -> None:
    """Install ``PIP`` into this environment; best effort: an older pip installs the course too,
    only slower. Offline, only when the wheelhouse holds a pip wheel."""
    if offline and not any(wheelhouse.glob("pip-*.whl")):
        return
    where = ["--no-index", "--find-links", str(wheelhouse)] if offline else []
    if pip(["install", *QUIET, "--no-compile", *where, PIP]):
        print(f"could not install {PIP}: the course installs with the pip this Python has", flush=True)


# pip's configuration (files and PIP_* variables) -> uv's options for the same places to look;
# a local folder or file:// index that does not exist is left out (pip ignores it with a warning)
UV_OPTIONS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
}


def pip_configuration(listing: str) -> dict[str, str]:
    """``pip config list``'s output -> option -> value, the way pip ranks them: a PIP_ variable
    (``:env:.``) over the ``[install]`` section over ``[global]``."""
    ranked: dict[str, tuple[int, str]] = {}
    for line in listing.splitlines():
        key, sep, value = line.partition("=")
        section, _, option = key.rpartition(".")
        rank = {":env:": 3, "install": 2, "global": 1}.get(section)
        if sep and rank and rank > ranked.get(option, (0, ""))[0]:
            ranked[option] = (rank, value.strip().strip("'\""))
    return {option: value for option, (_, value) in ranked.items()}


def _exists(place: str) -> bool:
    """False for a local folder or file:// URL that is not there (url2pathname: C:/ on Windows)."""
    if "://" not in place:
        return Path(place).exists()
    parsed = urllib.parse.urlparse(place)
    return parsed.scheme != "file" or Path(urllib.request.url2pathname(parsed.path)).exists()


def uv_sources(configuration: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """uv's options and environment for the indexes, links, constraints and certificate that pip's
    ``configuration`` (``pip_configuration``) names. pip looks in every index and takes the best
    version; uv does that with ``--index-strategy unsafe-best-match``."""
    options = ["--index-strategy", "unsafe-best-match"]
    for name, flag in UV_OPTIONS.items():
        options += [
            part for place in configuration.get(name, "").split() if _exists(place) for part in (flag, place)
        ]
    if configuration.get("no-index", "").lower() in ("1", "true", "yes", "on"):
        options.append("--no-index")
    options += [
        part for path in configuration.get("constraint", "").split() if _exists(path) for part in ("-c", path)
    ]
    cert = configuration.get("cert")
    return options, ({"SSL_CERT_FILE": cert} if cert and Path(cert).is_file() else {})


# the maintainers' install and the room's wheelhouse (tools/wheelhouse.py: it resolves for another
# platform, where pip evaluates markers for the machine it runs on); requirements-dev.txt pins it too
UV = "uv==0.13.8"


def uv() -> list[str] | None:
    """The command that runs uv (installed with the maintainers' tools), or None."""
    found = shutil.which("uv", path=str(Path(sys.executable).parent))
    return [found] if found else None


def uv_installer() -> list[str] | None:
    """The command that installs with uv into this environment (``UV`` installed by pip first
    when missing), or None where uv cannot be had: pip installs then."""
    if uv() is None and pip(["install", *QUIET, "--no-compile", UV]):
        print(f"could not install {UV}: pip installs the course", flush=True)
        return None
    found = uv()
    return None if found is None else [*found, "pip", "install", "-q", "--python", sys.executable]


def install(args: list[str], with_uv: list[str] | None) -> int:
    """Install ``args`` (requirement options) with uv when ``with_uv`` is its command (pip's
    sources, and pip itself: the course's documented commands use pip), else with pip."""
    if with_uv is None:
        return pip(["install", *QUIET, "--no-compile", *args])
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, cwd=ROOT
    ).stdout
    options, env = uv_sources(pip_configuration(listing))
    print("+ uv pip install " + " ".join([*options, *args]), flush=True)
    return subprocess.run([*with_uv, *options, *args], cwd=ROOT, env={**os.environ, **env}).returncode


def setup(requirements: Path, offline: bool, wheelhouse: Path, dry_run: bool, dev: Path | None = None) -> int:
    """Install torch, the requirements (and ``dev``'s), the package and the JupyterLab settings.

    The maintainers' install (``dev``, online) uses uv: it resolves and installs the course in
    in 2 s here (from its cache) where pip took 42 s; torch's build is still chosen by pip (torch_first)."""
    with_uv = uv_installer() if dev and not offline and not dry_run else None
    if with_uv is None and not dry_run:
        upgrade_pip(offline, wheelhouse)
    extra = ["--dry-run"] if dry_run else []
    files = ["-r", str(requirements), *(["-r", str(dev)] if dev else [])]
    if offline:
        if not any(wheelhouse.glob("torch-*.whl")):
            print(
                f"OFFLINE=1: no torch wheel in {wheelhouse}; fill it with `make wheelhouse` "
                "on a machine with a network (same OS and Python) and copy it here"
            )
            return 1
        extra += ["--no-index", "--find-links", str(wheelhouse)]
    elif not torch_first(requirements, torch_index(), extra if dry_run else [*extra, "--no-compile"]):
        return STOPPED
    if dry_run:
        return pip(["install", *QUIET, *extra, *files])
    status = install([*extra, *files, *([PIP] if with_uv else [])], with_uv)
    if status and with_uv:
        print("uv could not install the course (its message is above): pip installs it", flush=True)
        with_uv = None
        upgrade_pip(offline, wheelhouse)
        status = install([*extra, *files], None)
    if status == 0:
        status = install([*extra, "--no-deps", "-e", str(ROOT)], with_uv)
    if status == 0:
        warm_bytecode(dev is not None)
        for path in install_lab_settings():
            print(f"JupyterLab settings: {path}")
    return status


# What the course's kernels, workers and tools import: setup imports it once, which writes the
# bytecode of those ~1,800 modules (6-9 s) instead of compiling all ~11,000 files of the
# environment (compileall on 2 cores: 25 s). Anything else compiles on first import.
WARM = [
    "torch",
    "torch.utils.data",
    "numpy",
    "matplotlib.pyplot",
    "PIL.Image",
    "h5py",
    "ipywidgets",
    "jsonschema",
    "ipykernel.kernelapp",
    "jupyterlab.labapp",
    "loaderlab",
]
WARM_DEV = ["pytest", "xdist", "nbval.plugin", "nbclient", "mkdocs.commands.build"]
_WARM_CODE = """
import importlib, pkgutil, sys
sys.dont_write_bytecode = False  # whatever PYTHONDONTWRITEBYTECODE says: writing it is the point
names = sys.argv[1:]
for name in names:  # loaderlab adds its submodules as it goes
    try:
        module = importlib.import_module(name)
    except Exception:  # best effort: what does not import here compiles on first import
        continue
    if name == "loaderlab":
        found = pkgutil.walk_packages(module.__path__, "loaderlab.")
        names += [info.name for info in found if not info.name.endswith("__main__")]
"""


def warm_bytecode(dev: bool) -> None:
    """Write the bytecode of what the course imports (``WARM``, with the maintainers' tools:
    ``WARM_DEV``) by importing it once in this environment's Python. Best effort and silent."""
    names = [*WARM, *(WARM_DEV if dev else [])]
    print("+ python -c <import " + ", ".join(names) + ">  (writes their bytecode)", flush=True)
    subprocess.run([sys.executable, "-c", _WARM_CODE, *names], cwd=ROOT, check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["setup"])
    parser.add_argument("--requirements", type=Path, default=ROOT / "requirements.txt")
    parser.add_argument("--dev", action="store_true", help="also install requirements-dev.txt")
    parser.add_argument("--dev-requirements", type=Path, default=DEV_REQUIREMENTS)
    parser.add_argument("--wheelhouse", type=Path, default=WHEELHOUSE)
    parser.add_argument("--offline", action="store_true", help="install from --wheelhouse only")
    parser.add_argument(
        "--dry-run", action="store_true", help="resolve (pip --dry-run) without installing; skips the package"
    )
    args = parser.parse_args(argv)
    return setup(
        args.requirements,
        args.offline,
        args.wheelhouse,
        args.dry_run,
        dev=args.dev_requirements if args.dev else None,
    )


if __name__ == "__main__":
    sys.exit(main())
