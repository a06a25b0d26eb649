"""tools/wheelhouse.py (`make wheelhouse`, `make wheelhouse PLATFORMS=all PYTHONS=...`): which
wheels each laptop of a room installs, the options that ask pip for another platform's wheels and
the uv that resolves for it. Nothing here downloads; the release test resolves a wheelhouse filled
beforehand (LOADERLAB_ROOM_WHEELHOUSE) with no network."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from course_code import ROOT

from tools import wheelhouse


@pytest.mark.parametrize(
    "wheel, platform, python, fits",
    [
        ("torch-2.13.0-cp312-none-macosx_14_0_arm64.whl", "macos-arm64", "3.12", True),
        ("torch-2.13.0-cp312-none-macosx_14_0_arm64.whl", "macos-arm64", "3.13", False),  # another Python
        ("torch-2.13.0-cp312-cp312-win_amd64.whl", "macos-arm64", "3.12", False),  # another platform
        ("torch-2.13.0-cp312-cp312-win_amd64.whl", "windows-amd64", "3.12", True),
        ("torch-2.12.0-cp312-cp312-win_amd64.whl", "windows-amd64", "3.12", False),  # not the pinned version
        ("psutil-7.2.2-cp36-abi3-win_amd64.whl", "windows-amd64", "3.13", True),  # the stable ABI
        ("tqdm-4.70.1-py3-none-any.whl", "linux-x86_64", "3.11", True),  # pure Python: every laptop
        ("debugpy-1.8.22-cp312-cp312-macosx_15_0_universal2.whl", "macos-arm64", "3.12", True),
        (
            "numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
            "linux-x86_64",
            "3.11",
            True,
        ),
    ],
)
def test_which_wheels_a_laptop_of_the_room_installs(wheel, platform, python, fits):
    pins = {"torch": "2.13.0", "psutil": "7.2.2", "tqdm": "4.70.1", "debugpy": "1.8.22", "numpy": "2.4.6"}
    assert wheelhouse.wheel_fits(wheel, pins, platform, python) is fits


def test_the_room_wheelhouse_asks_pip_for_binary_wheels_of_each_platform():
    options = wheelhouse.target_options("windows-amd64", "3.13")
    assert options[:3] == ["--only-binary=:all:", "--platform", "win_amd64"]
    assert "--python-version" in options and options[options.index("--python-version") + 1] == "3.13"
    assert ["--abi", "cp313"] == options[options.index("--abi") : options.index("--abi") + 2]
    mac = wheelhouse.target_options("macos-arm64", "3.11")
    assert "macosx_14_0_arm64" in mac and "macosx_15_0_universal2" in mac


def test_an_unknown_platform_or_python_is_one_line(capsys):
    with pytest.raises(SystemExit) as stop:
        wheelhouse.main(["--platforms", "amiga-68k"])
    assert stop.value.code == 2 and "unknown platform or Python 'amiga-68k'" in capsys.readouterr().err


@pytest.mark.release
@pytest.mark.skipif(
    not os.environ.get("LOADERLAB_ROOM_WHEELHOUSE"),
    reason="set LOADERLAB_ROOM_WHEELHOUSE to a folder `make wheelhouse` filled with "
    "--platforms all (about 2 GB to download)",
)
@pytest.mark.parametrize("platform", ["linux-x86_64", "macos-arm64", "windows-amd64"])
@pytest.mark.parametrize("python", ["3.11", "3.12", "3.13"])
def test_the_room_wheelhouse_resolves_every_laptop_with_no_network(platform, python):
    folder = Path(os.environ["LOADERLAB_ROOM_WHEELHOUSE"])
    ok, size, why = wheelhouse.resolve_offline(ROOT / "requirements.txt", folder, platform, python)
    assert ok, why
    assert 150 * 2**20 < size < 400 * 2**20, f"{size / 2**20:.0f} MiB for {platform}, Python {python}"


def test_the_uv_the_wheelhouse_installs_is_the_one_the_maintainers_pin():
    assert wheelhouse.UV in (ROOT / "requirements-dev.txt").read_text().split()
