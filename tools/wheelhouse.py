"""Fill a wheelhouse (`make wheelhouse`): the wheels `make lab OFFLINE=1` installs from.

Standard library only: tools/course.py runs it (``python -m tools.wheelhouse``) with the virtual
environment's Python. It downloads every wheel a student needs (torch's CPU build, by the same
rules as setup: tools/install.py) into ``wheelhouse/``, for this machine's OS, CPU type and Python
version; with ``--platforms`` and ``--pythons`` for a whole room from one machine (``pip download
--platform ... --python-version ... --only-binary=:all:``; one flat folder, pip picks each laptop's
wheels), then resolves the requirements against it for each platform with no index and says its
size.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tools.install import (
    QUIET,
    ROOT,
    STOPPED,
    UV,
    WHEELHOUSE,
    answers,
    pip,
    torch_first,
    torch_index,
    uv,
)

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
    parser.add_argument("--requirements", type=Path, default=ROOT / "requirements.txt")
    parser.add_argument("--wheelhouse", type=Path, default=WHEELHOUSE, help="the folder to fill")
    parser.add_argument(
        "--platforms",
        help=f"for these platforms, comma-separated, or 'all' ({', '.join(PLATFORMS)}); "
        "default: this machine",
    )
    parser.add_argument(
        "--pythons", help=f"for these Pythons (default with --platforms: {','.join(PYTHONS)})"
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
    return wheelhouse(args.requirements, args.wheelhouse, platforms, pythons)


if __name__ == "__main__":
    sys.exit(main())
