"""`make preflight` (tools/preflight.py): passes here; a too-small /dev/shm or a missing kernel fails
with one clear line and exit 1. Only the first test starts JupyterLab."""

from __future__ import annotations

import sys
from collections import namedtuple

import psutil
import pytest
from course_code import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import preflight  # noqa: E402

MiB = 2**20
Usage = namedtuple("Usage", "total used free percent")


def _lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


@pytest.mark.course
def test_preflight_passes_here_starts_and_stops_jupyterlab(monkeypatch, capsys):
    monkeypatch.setattr(preflight, "LAB_START_S", 90)  # make test runs two units on 2 cores
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    assert preflight.main([]) == 0
    lines = _lines(capsys)
    assert len(lines) == len(preflight.CHECKS) + 1, lines
    assert not [line for line in lines if line.startswith("❌")], lines
    lab = next(line for line in lines if line.split()[1] == "lab")
    assert "served the course (kernel loaderlab, no news pop-up), stopped" in lab
    assert lines[-1].startswith("preflight: ready for the course")
    left = [p for p in psutil.Process().children(recursive=True)
            if p.pid not in before and p.status() != psutil.STATUS_ZOMBIE and not preflight._helper(p)]
    assert not left, f"processes left behind: {[p.cmdline()[:3] for p in left]}"


def test_too_small_dev_shm_fails_with_its_fix(monkeypatch, capsys):
    monkeypatch.setattr(preflight, "shm_usage", lambda: Usage(64 * MiB, 0, 64 * MiB, 0.0))
    assert preflight.main(["--skip", "lab,loader,torch"]) == 1
    lines = _lines(capsys)
    shm = [line for line in lines if line.startswith("❌")]
    assert len(shm) == 1 and shm[0].split()[1] == "shm", lines
    assert "/dev/shm 64 MB" in shm[0] and "too small" in shm[0] and "fix: docker run --shm-size=1g" in shm[0]
    assert lines[-1].startswith("preflight: 1 check(s) failed")


@pytest.mark.parametrize("specs, says", [
    ({"python3": ["/usr/bin/python3"]}, "Jupyter kernel 'loaderlab' is not registered (found: python3)"),
    ({"loaderlab": ["/elsewhere/.venv/bin/python", "-m", "ipykernel_launcher"]},
     "kernel 'loaderlab' runs /elsewhere/.venv/bin/python, not this environment's Python"),
])
def test_kernel_not_registered_here_fails_with_its_fix(monkeypatch, capsys, specs, says):
    monkeypatch.setattr(preflight, "kernel_specs", lambda: specs)
    assert preflight.main(["--skip", "lab,loader,torch"]) == 1
    failed = [line for line in _lines(capsys) if line.startswith("❌")]
    assert len(failed) == 1 and failed[0].split()[1] == "kernel"
    assert says in failed[0] and "fix: .venv/bin/python -m ipykernel install --sys-prefix --name loaderlab" in failed[0]


def test_a_broken_check_or_bad_option_is_one_line(monkeypatch, capsys):
    def broken():
        raise OSError("no such file")

    monkeypatch.setattr(preflight, "CHECKS", {"disk": broken})
    assert preflight.main([]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0] == ("❌ disk    the check itself failed: OSError: no such file"
                                   " — fix: report it to the instructor")
    assert "Traceback" not in out
    assert preflight.main(["--skip", "nope"]) == 2
    assert "unknown check 'nope'" in capsys.readouterr().err
