"""`make preflight` (tools/preflight.py): passes here; a too-small /dev/shm or a missing kernel fails
with one clear line and exit 1; before setup it runs on a bare interpreter (no psutil, no torch).
Only the first test starts JupyterLab."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections import namedtuple

import psutil
import pytest
from course_code import ROOT, static_server

from tools import preflight

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
    assert [line.split()[1] for line in lines[:-1]] == list(preflight.AFTER_SETUP), lines
    assert not [line for line in lines if line.startswith("❌")], lines
    lab = next(line for line in lines if line.split()[1] == "lab")
    assert "served the course (kernel loaderlab, no news pop-up), stopped" in lab
    assert lines[-1].startswith("preflight: ready for the course")
    left = [
        p
        for p in psutil.Process().children(recursive=True)
        if p.pid not in before and p.status() != psutil.STATUS_ZOMBIE and not preflight._helper(p)
    ]
    assert not left, f"processes left behind: {[p.cmdline()[:3] for p in left]}"


def test_too_small_dev_shm_fails_with_its_fix(monkeypatch, capsys):
    monkeypatch.setattr(preflight, "shm_usage", lambda: Usage(64 * MiB, 0, 64 * MiB, 0.0))
    assert preflight.main(["--skip", "lab,loader,torch"]) == 1
    lines = _lines(capsys)
    shm = [line for line in lines if line.startswith("❌")]
    assert len(shm) == 1 and shm[0].split()[1] == "shm", lines
    assert "/dev/shm 64 MB" in shm[0] and "too small" in shm[0] and "fix: docker run --shm-size=1g" in shm[0]
    assert lines[-1].startswith("preflight: 1 check(s) failed")


@pytest.mark.parametrize(
    "specs, says",
    [
        ({"python3": ["/usr/bin/python3"]}, "Jupyter kernel 'loaderlab' is not registered (found: python3)"),
        (
            {"loaderlab": ["/elsewhere/.venv/bin/python", "-m", "ipykernel_launcher"]},
            "kernel 'loaderlab' runs /elsewhere/.venv/bin/python, not this environment's Python",
        ),
    ],
)
def test_kernel_not_registered_here_fails_with_its_fix(monkeypatch, capsys, specs, says):
    monkeypatch.setattr(preflight, "kernel_specs", lambda: specs)
    assert preflight.main(["--skip", "lab,loader,torch"]) == 1
    failed = [line for line in _lines(capsys) if line.startswith("❌")]
    assert len(failed) == 1 and failed[0].split()[1] == "kernel"
    assert (
        says in failed[0]
        and "fix: .venv/bin/python -m ipykernel install --sys-prefix --name loaderlab" in failed[0]
    )


def test_a_broken_check_or_bad_option_is_one_line(monkeypatch, capsys):
    def broken():
        raise OSError("no such file")

    monkeypatch.setattr(preflight, "CHECKS", {"disk": broken})
    assert preflight.main([]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        "❌ disk    the check itself failed: OSError: no such file — fix: report it to the instructor"
    )
    assert "Traceback" not in out
    assert preflight.main(["--skip", "nope"]) == 2
    assert "unknown check 'nope'" in capsys.readouterr().err


@pytest.fixture
def local_indexes(tmp_path):
    """A local HTTP server standing for the package index (serves pip/) and PyTorch's CPU
    index (serves torch/): (PIP_INDEX_URL, TORCH_INDEX)."""
    for project in ("pip", "torch"):
        (tmp_path / project).mkdir()
        (tmp_path / project / "index.html").write_text(f"<a href='{project}-1.0.tar.gz'>{project}</a>")

    with static_server(tmp_path) as url:
        yield url, url


def _bare(**env: str) -> tuple[subprocess.CompletedProcess, float]:
    """tools/preflight.py as on a machine where nothing is installed: -I (no user site, no
    PYTHONPATH) and -S (no site-packages: no psutil, torch or Jupyter)."""
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-I", "-S", "tools/preflight.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    return result, time.monotonic() - start


def test_before_setup_it_runs_on_a_bare_interpreter(local_indexes):
    pypi, cpu = local_indexes
    result, _ = _bare(PIP_INDEX_URL=pypi, TORCH_INDEX=cpu)
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and not result.stderr, result.stdout + result.stderr
    assert [line.split()[1] for line in lines[:-1]] == list(preflight.BEFORE_SETUP), lines
    assert all(line.startswith("✅") for line in lines[:-1]), lines
    assert f"{pypi} answers, and so does {cpu}" in lines[-2]
    assert lines[-1].startswith("preflight: ready to install: run `make lab`")  # psutil, torch: absent


def test_before_setup_an_index_that_does_not_answer_fails_with_its_fix():
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        index = f"http://127.0.0.1:{closed.getsockname()[1]}/simple"
    result, _ = _bare(PIP_INDEX_URL=index)
    failed = [line for line in result.stdout.splitlines() if line.startswith("❌")]
    assert result.returncode == 1 and len(failed) == 1 and failed[0].split()[1] == "index", result.stdout
    assert f"the package index {index} did not answer" in failed[0] and "OFFLINE=1" in failed[0]


@pytest.mark.course
@pytest.mark.timing
def test_before_setup_an_index_that_does_not_answer_is_given_up_in_bounded_time():
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        index = f"http://127.0.0.1:{closed.getsockname()[1]}/simple"
    result, seconds = _bare(PIP_INDEX_URL=index)
    assert result.returncode == 1 and seconds < 20, f"took {seconds:.1f} s"


@pytest.mark.parametrize(
    "where, status, says",
    [
        (("linux", "x86_64"), "ok", "torch 2.13 has wheels for it"),
        (("linux", "aarch64"), "ok", "torch 2.13 has wheels for it"),
        (("darwin", "arm64"), "ok", "torch 2.13 has wheels for it"),
        (("win32", "amd64"), "ok", "torch 2.13 has wheels for it"),
        (("darwin", "x86_64"), "fail", "no wheels for Intel Macs"),
        (("linux", "riscv64"), "fail", "ships no wheel for this OS and CPU type"),
    ],
)
def test_os_and_cpu_type_torch_ships_wheels_for(monkeypatch, where, status, says):
    monkeypatch.setattr(preflight, "machine", lambda: where)
    result = preflight.check_platform()
    assert result[0] == status and says in result[1], result


@pytest.mark.parametrize(
    "version, status",
    [
        ((3, 10, 13), "fail"),
        ((3, 11, 7), "ok"),
        ((3, 12, 1), "ok"),
        ((3, 13, 0), "ok"),
        ((3, 14, 0), "fail"),
    ],
)
def test_python_versions_are_the_tested_ones(version, status):
    result = preflight.check_python(version)
    assert result[0] == status, result
    if status == "fail":
        assert "3.11, 3.12 or 3.13" in result[1] and "PYTHON=python3.11 make setup" in result[2]


def test_ram_from_the_standard_library(monkeypatch):
    total, available = preflight.memory()
    if sys.platform.startswith("linux"):
        assert 0 < available <= total
    monkeypatch.setattr(preflight, "memory", lambda: (4 * 2**30, 2**30))
    assert preflight.check_ram()[0] == "fail"
    monkeypatch.setattr(preflight, "memory", lambda: (8 * 2**30, None))  # macOS: the total only
    assert preflight.check_ram()[:2] == ("ok", "8.0 GB RAM (the free part is not measured here)")


def test_a_report_holds_the_machine_and_every_check_and_the_summary_reads_a_folder(
    monkeypatch, tmp_path, capsys
):
    monkeypatch.setattr(preflight, "shm_usage", lambda: Usage(64 * MiB, 0, 64 * MiB, 0.0))  # fails
    reports = tmp_path / "reports"
    reports.mkdir()
    assert (
        preflight.main(
            ["--skip", "lab,loader,torch", "--report", str(reports / "jane.json"), "--name", "Jane Roe"]
        )
        == 1
    )
    assert (
        preflight.main(
            ["--skip", "lab,loader,torch,shm", "--report", str(reports / "joe.json"), "--name", "Joe Bloggs"]
        )
        == 0
    )
    (reports / "broken.json").write_text("{")
    capsys.readouterr()
    assert preflight.main(["--summarise", str(reports)]) == 0
    table = capsys.readouterr().out.splitlines()
    jane = next(line for line in table if line.startswith("Jane Roe"))
    assert " no " in jane and "shm:" in jane, jane  # not ready, and the fix for the failing check
    joe = next(line for line in table if line.startswith("Joe Bloggs"))
    assert " yes " in joe, joe
    assert any(line.startswith("broken") and "unreadable" in line for line in table), table
    assert "1 of 3 ready (every check passed after setup)" in table and "1 × shm failed" in table, table


def test_summarise_a_missing_folder_and_report_into_a_missing_folder_are_one_line(tmp_path, capsys):
    assert preflight.main(["--summarise", str(tmp_path / "nope")]) == 2
    assert preflight.main(["--report", str(tmp_path / "nope" / "r.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("preflight: --") for line in err), err


GiB = 2**30
PEAKS = {"notebooks/03_workers.ipynb": 1800, "notebooks/14_finding_the_bottleneck.ipynb": 302}


@pytest.mark.parametrize(
    "available, peaks, status, says",
    [
        # the heaviest notebook's 1800 MB plus the 1 GB margin: 2.8 GB
        (2.5 * GiB, PEAKS, "warn", "below the 2.8 GB the heaviest notebook needs (03_workers peaks at 1800"),
        (3 * GiB, PEAKS, "ok", "16.0 GB RAM, 3.0 GB available"),
        (1 * GiB, PEAKS, "fail", "the course needs 1.5 GB free"),  # below the minimum: still a failure
        (1.6 * GiB, {}, "ok", "16.0 GB RAM, 1.6 GB available"),  # nothing recorded: the minimum alone
    ],
)
def test_ram_below_the_heaviest_recorded_notebook_warns(monkeypatch, available, peaks, status, says):
    monkeypatch.setattr(preflight, "memory", lambda: (16 * GiB, int(available)))
    monkeypatch.setattr(preflight, "recorded_peaks", lambda: peaks)
    result = preflight.check_ram()
    assert result[0] == status and says in result[1], result
    if status == "warn":
        assert "plus 1 GB for JupyterLab and its browser tab" in result[1]
        assert "close other programs (browser tabs, IDEs) before 03_workers" in result[2]


def test_a_memory_warning_does_not_fail_preflight(monkeypatch, capsys):
    monkeypatch.setattr(preflight, "memory", lambda: (8 * GiB, 2 * GiB))
    monkeypatch.setattr(preflight, "recorded_peaks", lambda: PEAKS)
    monkeypatch.setattr(preflight, "CHECKS", {"ram": preflight.check_ram})
    assert preflight.run(deep=False) == 0
    lines = _lines(capsys)
    assert lines[0].startswith("⚠️  ram ") and "03_workers peaks at 1800 MB" in lines[0], lines
    assert "— fix: close other programs" in lines[0]
    assert "(1 warning(s)" in lines[-1]


def test_recorded_peaks_read_the_recorders_file(monkeypatch, tmp_path):
    peaks = preflight.recorded_peaks()  # docs/peak_memory.json as committed
    assert peaks and all(
        name.startswith(("notebooks/", "solutions/")) and mb > 0 for name, mb in peaks.items()
    )
    mixed = '{"notebooks/03_x.ipynb": 900, "notebooks/x.ipynb": "n/a"}'
    cases = [(None, {}), ("not json", {}), ("[1, 2]", {}), (mixed, {"notebooks/03_x.ipynb": 900})]
    for text, expected in cases:
        path = tmp_path / "peak_memory.json"
        path.unlink(missing_ok=True)
        if text is not None:
            path.write_text(text)
        monkeypatch.setattr(preflight, "PEAK_MEMORY", path)
        assert preflight.recorded_peaks() == expected, text
