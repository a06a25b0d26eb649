"""Install the course into the running Python (`make setup`) or fill a wheelhouse (`make wheelhouse`).

Standard library only: tools/course.py runs it with the fresh virtual environment's Python.

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
- ``wheelhouse``: downloads every wheel a student needs (torch's CPU build, by the same rules)
  into ``wheelhouse/``, for this machine's OS, CPU type and Python version; with ``--platforms``
  and ``--pythons`` for a whole room from one machine (``pip download --platform ...
  --python-version ... --only-binary=:all:``; one flat folder, pip picks each laptop's wheels),
  then resolves the requirements against it for each platform with no index and says its size.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
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


def setup(requirements: Path, offline: bool, wheelhouse: Path, dry_run: bool, dev: Path | None = None) -> int:
    """Install torch, the requirements (and ``dev``'s), the package and the JupyterLab settings."""
    if not dry_run:
        upgrade_pip(offline, wheelhouse)
    # pip compiles each package's files one at a time; compile_packages does it on every core
    extra = ["--dry-run"] if dry_run else ["--no-compile"]
    files = ["-r", str(requirements), *(["-r", str(dev)] if dev else [])]
    if offline:
        if not any(wheelhouse.glob("torch-*.whl")):
            print(
                f"OFFLINE=1: no torch wheel in {wheelhouse}; fill it with `make wheelhouse` "
                "on a machine with a network (same OS and Python) and copy it here"
            )
            return 1
        extra += ["--no-index", "--find-links", str(wheelhouse)]
    elif not torch_first(requirements, torch_index(), extra):
        return STOPPED
    status = pip(["install", *QUIET, *extra, *files])
    if status or dry_run:
        return status
    status = pip(["install", *QUIET, *extra, "--no-deps", "-e", str(ROOT)])
    if status == 0:
        compile_packages()
        for path in install_lab_settings():
            print(f"JupyterLab settings: {path}")
    return status


def compile_packages() -> None:
    """Byte-compile this environment's packages on every core at once (pip compiles one file at
    a time: the course's 10,500 files took 34 s that way, 22-25 s on 2 cores). Best effort and
    silent, as pip's own compiling is: a file that does not compile is left to import from source."""
    folders = sorted({sysconfig.get_paths()[key] for key in ("purelib", "platlib")})
    print("+ python -m compileall -qq -j 0 " + " ".join(folders), flush=True)
    subprocess.run([sys.executable, "-m", "compileall", "-qq", "-j", "0", *folders], check=False)


# the room's platforms -> (uv's name for it, pip's platform tags: a wheel fits when it carries one);
# torch 2.13 ships manylinux_2_28 (Linux), macosx_11_0 and later (Apple silicon) and win_amd64 wheels
PLATFORMS = {
    "linux-x86_64": (
        "x86_64-manylinux_2_28",
        [
            "manylinux_2_28_x86_64",
            "manylinux_2_27_x86_64",
            "manylinux_2_17_x86_64",
            "manylinux2014_x86_64",
            "manylinux_2_5_x86_64",
            "manylinux1_x86_64",
        ],
    ),
    "macos-arm64": (
        "aarch64-apple-darwin",
        [
            *(f"macosx_{major}_0_{arch}" for major in range(15, 10, -1) for arch in ("arm64", "universal2")),
            *(f"macosx_10_{minor}_universal2" for minor in (16, 15, 14, 13, 12, 9)),
        ],
    ),
    "windows-amd64": ("x86_64-pc-windows-msvc", ["win_amd64"]),
}
PYTHONS = ("3.11", "3.12", "3.13")
MACOS_TARGET = "15.0"  # the oldest macOS the offline wheelhouse serves (debugpy's wheels)
UV = "uv==0.13.8"  # resolves for another platform: pip evaluates markers for the machine it runs on


def target_options(platform: str, python: str) -> list[str]:
    """pip's options that choose the wheels of ``platform`` (a PLATFORMS key) and CPython
    ``python`` ('3.12') instead of this machine's: binary wheels only."""
    abi = "cp" + python.replace(".", "")
    tags = [option for tag in PLATFORMS[platform][1] for option in ("--platform", tag)]
    return [
        "--only-binary=:all:",
        *tags,
        "--python-version",
        python,
        "--implementation",
        "cp",
        "--abi",
        abi,
        "--abi",
        "abi3",
        "--abi",
        "none",
    ]


def uv() -> list[str] | None:
    """The command that runs uv (installed with the maintainers' tools), or None."""
    found = shutil.which("uv", path=str(Path(sys.executable).parent))
    return [found] if found else None


def compiled(
    requirements: Path,
    platform: str,
    python: str,
    out: Path,
    offline_from: Path | None = None,
    index: str | None = None,
) -> tuple[bool, str]:
    """Pin every package ``platform``/``python`` installs (markers evaluated for that platform)
    into ``out`` with uv; ``offline_from``: resolve from that folder of wheels alone, no index.
    Return (done, why not)."""
    where = (
        ["--no-index", "--find-links", str(offline_from)]
        if offline_from
        else (["--extra-index-url", index, "--index-strategy", "unsafe-best-match"] if index else [])
    )
    command = [
        *(uv() or ["uv"]),
        "pip",
        "compile",
        str(requirements),
        "--python-platform",
        PLATFORMS[platform][0],
        "--python-version",
        python,
        "--no-annotate",
        "--no-header",
        "-q",
        "--only-binary",
        ":all:",
        *where,
        "-o",
        str(out),
    ]
    # torch 2.13's Apple-silicon wheels need macOS 14, debugpy 1.8.22's 15 (uv's default is older)
    target = {"MACOSX_DEPLOYMENT_TARGET": MACOS_TARGET} if platform.startswith("macos") else {}
    env = {**os.environ, **target}
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return done.returncode == 0, last[:140]


def wheel_fits(name: str, pins: dict[str, str], platform: str, python: str) -> bool:
    """True when the wheel file ``name`` is one of ``pins`` (normalised name -> version) and
    installs on ``platform`` with CPython ``python``."""
    from packaging.tags import compatible_tags, cpython_tags
    from packaging.utils import canonicalize_name, parse_wheel_filename

    try:
        project, version, _, tags = parse_wheel_filename(name)
    except ValueError:
        return False
    if pins.get(canonicalize_name(project)) != str(version):
        return False
    major, minor = map(int, python.split("."))
    plats = PLATFORMS[platform][1]
    fit = {*cpython_tags((major, minor), platforms=plats), *compatible_tags((major, minor), platforms=plats)}
    return bool(set(tags) & fit)


def room_wheelhouse(requirements: Path, dest: Path, platforms: list[str], pythons: list[str]) -> int:
    """Download the wheels of every platform × Python into ``dest`` (one flat folder), then
    resolve the requirements for each from ``dest`` alone; print what each laptop installs."""
    if uv() is None and pip(["install", *QUIET, UV]):  # resolves for another platform than this one
        print(
            f"the room's wheelhouse needs uv to resolve for other platforms, and `pip install {UV}` "
            "failed (above): install it, then run this again"
        )
        return 2
    dest.mkdir(parents=True, exist_ok=True)
    failed = []
    with tempfile.TemporaryDirectory() as folder:
        for platform in platforms:
            index = torch_index(platform="linux" if platform.startswith("linux") else platform)
            for python in pythons:
                print(f"== {platform}, Python {python}", flush=True)
                pins = Path(folder) / f"{platform}-{python}.txt"
                if index is not None and not answers(index):  # never the CUDA build of the default index
                    print(
                        f"   skipped: torch's CPU build comes from {index}, which did not answer; run this "
                        "again where it answers (docs/install.md)"
                    )
                    failed.append(f"{platform}/{python}")
                    continue
                ok, why = compiled(requirements, platform, python, pins, index=index)
                extra = ["--extra-index-url", index] if index else []
                if not ok or pip(
                    [
                        "download",
                        *QUIET,
                        "--no-deps",
                        "--dest",
                        str(dest),
                        *extra,
                        *target_options(platform, python),
                        "-r",
                        str(pins),
                        "setuptools",
                    ]
                ):
                    print(f"   not complete: {why if not ok else 'pip download failed (above)'}")
                    failed.append(f"{platform}/{python}")
    rows = [("platform", "python", "resolves offline", "MiB")]
    for platform in platforms:
        for python in pythons:
            ok, size, why = resolve_offline(requirements, dest, platform, python)
            rows.append((platform, python, "yes" if ok else f"no: {why}", f"{size / 2**20:,.0f}"))
            failed += [] if ok else [f"{platform}/{python}"]
    files = list(dest.glob("*.whl"))
    print("\n".join(f"{a:<14} {b:<6} {c:<40} {d:>6}" for a, b, c, d in rows))
    print(
        f"{dest}: {len(files)} wheels, {sum(f.stat().st_size for f in files) / 2**20:,.0f} MiB in all; "
        "each student copies it and runs `make lab OFFLINE=1`"
    )
    return 1 if failed else 0


def resolve_offline(requirements: Path, dest: Path, platform: str, python: str) -> tuple[bool, int, str]:
    """Resolve the requirements for ``platform``/``python`` from ``dest`` alone (uv, no index:
    no network); return (resolved, bytes of the wheels that laptop installs, why not)."""
    from packaging.utils import canonicalize_name

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "pins.txt"
        ok, why = compiled(requirements, platform, python, out, offline_from=dest)
        if not ok:
            return False, 0, why
        pins = dict(line.split("==", 1) for line in out.read_text().splitlines() if "==" in line)
    pins = {canonicalize_name(k): v.split(";")[0].strip() for k, v in pins.items()}
    size = sum(f.stat().st_size for f in dest.glob("*.whl") if wheel_fits(f.name, pins, platform, python))
    return True, size, ""


def wheelhouse(
    requirements: Path, dest: Path, platforms: list[str] | None = None, pythons: list[str] | None = None
) -> int:
    """Download every wheel a student needs into ``dest`` (setuptools too: the offline build
    of the editable package needs it): for this machine, or for ``platforms`` × ``pythons``."""
    if platforms or pythons:
        return room_wheelhouse(requirements, dest, platforms or list(PLATFORMS), pythons or list(PYTHONS))
    dest.mkdir(parents=True, exist_ok=True)
    links = ["--dest", str(dest), "--find-links", str(dest)]
    if not torch_first(requirements, torch_index(), links, action="download"):
        return STOPPED
    status = pip(["download", *QUIET, *links, "-r", str(requirements), "setuptools"])
    files = list(dest.glob("*"))
    size = sum(f.stat().st_size for f in files) / 2**20
    print(f"{dest}: {len(files)} files, {size:,.0f} MiB; `make lab OFFLINE=1` installs from it")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["setup", "wheelhouse"])
    parser.add_argument("--requirements", type=Path, default=ROOT / "requirements.txt")
    parser.add_argument("--dev", action="store_true", help="also install requirements-dev.txt")
    parser.add_argument("--dev-requirements", type=Path, default=DEV_REQUIREMENTS)
    parser.add_argument("--wheelhouse", type=Path, default=WHEELHOUSE)
    parser.add_argument("--offline", action="store_true", help="install from --wheelhouse only")
    parser.add_argument(
        "--platforms",
        help="wheelhouse: for these platforms, comma-separated, or 'all' "
        f"({', '.join(PLATFORMS)}); default: this machine",
    )
    parser.add_argument(
        "--pythons", help=f"wheelhouse: for these Pythons (default with --platforms: {','.join(PYTHONS)})"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="resolve (pip --dry-run) without installing; skips the package"
    )
    args = parser.parse_args(argv)
    named = [p for p in (args.platforms or "").split(",") if p]
    platforms = list(PLATFORMS) if args.platforms == "all" else named
    pythons = [p for p in (args.pythons or "").split(",") if p]
    wrong = [p for p in platforms if p not in PLATFORMS] + [p for p in pythons if p not in PYTHONS]
    if wrong:
        parser.error(
            f"unknown platform or Python {wrong[0]!r}: platforms {', '.join(PLATFORMS)}; "
            f"Pythons {', '.join(PYTHONS)}"
        )
    if args.command == "wheelhouse":
        return wheelhouse(args.requirements, args.wheelhouse, platforms, pythons)
    return setup(
        args.requirements,
        args.offline,
        args.wheelhouse,
        args.dry_run,
        dev=args.dev_requirements if args.dev else None,
    )


if __name__ == "__main__":
    sys.exit(main())
