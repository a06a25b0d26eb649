"""The package as a learner or a notebook's worker gets it: a built wheel, and a light import."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest
from course_code import ROOT


def _modules_in_tree() -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / "loaderlab").rglob("*.py")}


@pytest.mark.course
def test_the_wheel_holds_every_module_and_imports_them_without_an_editable_install(tmp_path):
    # Built from a copy: a build/ folder left in the checkout would hide a missing package.
    source = tmp_path / "source"
    shutil.copytree(ROOT / "loaderlab", source / "loaderlab", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-q",
            "-w",
            str(wheels),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("loaderlab-*.whl")
    in_wheel = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("loaderlab/")}
    assert _modules_in_tree() <= in_wheel, f"missing from the wheel: {sorted(_modules_in_tree() - in_wheel)}"

    # A fresh virtual environment: the wheel installed into its own site-packages; torch & co.
    # come from this environment through a .pth line (which does not run this environment's
    # editable-install hook, so only the wheel can provide loaderlab).
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(
        subprocess.run(
            [str(python), "-c", purelib], check=True, capture_output=True, text=True
        ).stdout.strip()
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--disable-pip-version-check",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (site / "course_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    script = textwrap.dedent(f"""
        import importlib, pkgutil, sys
        sys.path = [p for p in sys.path if p not in ("", {str(ROOT)!r})]
        import loaderlab
        names = ["loaderlab"] + [m.name for m in pkgutil.walk_packages(loaderlab.__path__, "loaderlab.")]
        outside = [n for n in names if not importlib.import_module(n).__file__.startswith({str(site)!r})]
        print(len(names), outside)
    """)
    result = subprocess.run(
        [str(python), "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    count, outside = result.stdout.split(maxsplit=1)
    assert int(count) == len(_modules_in_tree()) and outside.strip() == "[]", result.stdout


@pytest.mark.course
def test_import_loaderlab_stays_light():
    """Spawned workers that unpickle a course object import the package: no checkers, no doctor,
    no matplotlib. ``loaderlab.doctor`` still works (loaded on first use)."""
    script = textwrap.dedent("""
        import sys
        import loaderlab
        heavy = sorted(m for m in sys.modules
                       if m.startswith(("loaderlab.checks", "loaderlab.doctor", "matplotlib")))
        print(heavy)
        assert callable(loaderlab.doctor) and "loaderlab.doctor" in sys.modules
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]", f"import loaderlab imported {result.stdout.strip()}"
