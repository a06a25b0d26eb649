"""Maintenance tools: the lab generator, the executor, and the `make lab` server (smoke test)."""

from __future__ import annotations

import importlib.util
import json
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.request

import psutil
import pytest
from course_code import ROOT


def _tool(name: str):
    return importlib.import_module(f"tools.{name}")


def test_lab_stub_replaces_each_solution_region_keeping_indentation():
    make_labs = _tool("make_labs")
    source = (
        "def f(x):\n"
        "    ### BEGIN SOLUTION\n"
        "    y = x + 1\n"
        "    return y\n"
        "    ### END SOLUTION\n"
        "\n"
        "### BEGIN SOLUTION\n"
        "z = 3\n"
        "### END SOLUTION\n"
        "check(f)\n"
    )
    assert make_labs.stub_source(source) == (
        "def f(x):\n"
        '    raise NotImplementedError("your code here")\n'
        "\n"
        'raise NotImplementedError("your code here")\n'
        "check(f)\n"
    )


def test_labs_are_up_to_date_with_solutions(capsys):
    # in this process (`python -m tools.make_labs` as a command: tests/test_tools_package.py)
    assert _tool("make_labs").main(["--check"]) == 0, capsys.readouterr().out


def test_stored_notebooks_carry_no_timing_metadata_and_use_the_course_kernel():
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        assert nb["metadata"]["kernelspec"]["name"] == "loaderlab", path.name
        for cell in nb["cells"]:
            assert "execution" not in cell.get("metadata", {}), f"{path.name}: timing metadata"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, b""


@pytest.mark.course
def test_make_lab_server_serves_the_course_and_requires_the_token():
    command = _tool("lab_server").server_command(
        port=_free_port(), token=secrets.token_hex(16), browser=False
    )
    token = next(a.split("=", 1)[1] for a in command if a.startswith("--IdentityProvider.token="))
    port = next(a.split("=", 1)[1] for a in command if a.startswith("--ServerApp.port="))
    assert "--ServerApp.ip=127.0.0.1" in command
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    family = []
    try:
        deadline = time.monotonic() + 90
        status = None
        while time.monotonic() < deadline:
            assert server.poll() is None, "jupyter lab exited during start-up"
            try:
                status, _ = _get(f"{base}/api/status?token={token}", timeout=2)
            except OSError:
                status = None
            if status == 200:
                break
            time.sleep(0.5)
        assert status == 200, "server did not answer /api/status within 90 s"
        family = [server.pid] + [p.pid for p in psutil.Process(server.pid).children(recursive=True)]

        status, body = _get(f"{base}/api/contents/notebooks?token={token}")
        assert status == 200
        names = {item["name"] for item in json.loads(body)["content"]}
        assert "00_start_here.ipynb" in names

        status, body = _get(f"{base}/api/contents/notebooks/00_start_here.ipynb?token={token}")
        assert status == 200 and json.loads(body)["content"]["cells"]

        status, _ = _get(f"{base}/api/contents/notebooks")
        assert status == 403, "a request without the token must be refused"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(
        psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in family
    ):
        time.sleep(0.2)
    left = [p for p in family if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not left, f"processes left behind by the server: {len(left)}"


def test_soak_reports_each_failing_cell_with_what_differed(tmp_path):
    soak = _tool("soak")
    junit = tmp_path / "run.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="notebooks.15_x.ipynb" name="Cell 10"><failure message="differ">'
        "nbval: cell 10 differs\nexpected: FAILED\ngot: ok, all 12 batches</failure></testcase>"
        '<testcase classname="notebooks.15_x.ipynb" name="Cell 11"/>'
        '<testcase classname="notebooks.16_x.ipynb" name="Cell 2"><error message="boom"/></testcase>'
        "</testsuite></testsuites>"
    )
    failed = soak.failed_cells(junit)
    assert list(failed) == ["notebooks.15_x.ipynb::Cell 10", "notebooks.16_x.ipynb::Cell 2"]
    assert failed["notebooks.15_x.ipynb::Cell 10"].endswith("got: ok, all 12 batches")
    assert failed["notebooks.16_x.ipynb::Cell 2"] == "boom"


@pytest.mark.course
@pytest.mark.timing
def test_soak_load_keeps_one_core_busy_and_ends_by_itself():
    busy = _tool("course").busy_core(2.0)
    try:
        used, deadline = 0.0, time.monotonic() + 10  # bounded: it stops after its 2 s by itself
        while busy.poll() is None and time.monotonic() < deadline:
            try:  # the most CPU it used before it ended; a sleeping process would use ~0.02 s
                used = max(used, psutil.Process(busy.pid).cpu_times().user)
            except psutil.Error:
                break
            time.sleep(0.05)
        # margin: 2 s of busy loop; 0.2 s is a tenth of it, ten times what a sleeping process uses
        assert used > 0.2, f"the load used {used:.2f} s of CPU in its 2 s (another job took the cores?)"
        busy.wait(timeout=1)
    finally:
        busy.kill()
        busy.wait()
    assert busy.returncode == 0
