"""Notebook 18's playground in a real browser: JupyterLab started as `make lab` starts it
(tools/lab_server.py), Debian's headless Chromium driven by selenium opens the playground,
runs every cell, clicks one control (num_workers = 4) and waits for the plot to be redrawn.

It runs on a copy of the notebook and its lesson modules in a temporary folder (the server's
root): the browser's kernel rewrites lesson18_samples*.py and JupyterLab may save the notebook, and
neither may touch the repository while nbval runs the same notebook. Skipped, with the reason,
where Chromium, its driver or selenium is missing (.ci/run installs Debian's chromium and
chromium-driver). The server, the kernel, its workers, chromedriver and Chromium are all
stopped in ``finally``, and the test checks that none is left.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
from course_code import ROOT

CHROMIUM = Path("/usr/bin/chromium")
DRIVER = Path("/usr/bin/chromedriver")
NOTEBOOK = "notebooks/18_playground.ipynb"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1300,1900",
)
RUN_ALL = """
const done = arguments[arguments.length - 1];
(async () => {
  const app = window.jupyterapp;
  await app.restored;
  let panel = app.shell.currentWidget;
  for (let i = 0; i < 600 && !(panel && panel.sessionContext && panel.content); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    panel = app.shell.currentWidget;
  }
  await panel.context.ready;
  await panel.sessionContext.ready;
  app.commands.execute("notebook:run-all-cells");
  done("started");
})().catch((error) => done("error: " + error));
"""
# the playground's picture and status line, and every output's text
PICTURE = "return Array.from(document.querySelectorAll('img.widget-image')).map(i => i.src).filter(s => s)"
STATUS = (
    "return Array.from(document.querySelectorAll('.widget-html-content'))"
    ".map(e => e.textContent).filter(t => t.startsWith('redrawn') || t.startsWith('the run failed'))"
)
OUTPUTS = (
    "return Array.from(document.querySelectorAll('.jp-OutputArea-output'))"
    ".map(e => e.textContent).join('\\n')"
)


def _missing() -> str | None:
    if not CHROMIUM.exists():
        return f"no {CHROMIUM}: install Debian's chromium and chromium-driver (.ci/run does when missing)"
    if not DRIVER.exists():
        return f"no {DRIVER}: install Debian's chromium-driver (.ci/run does when missing)"
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed: make test installs requirements-dev.txt"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lab_command(port: int, token: str, root: Path) -> list[str]:
    """`make lab`'s command (tools/lab_server.py) with the copy as its root, and the app exposed to
    scripts."""
    from tools import lab_server

    argv = lab_server.server_command(port=port, token=token, browser=False)
    argv = [a for a in argv if not a.startswith(("--ServerApp.root_dir=", "--LabApp.default_url="))]
    return argv + [f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True"]


def _wait(what: str, check, timeout_s: float, interval_s: float = 0.25):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval_s)
    raise AssertionError(f"{what}: not within {timeout_s:.0f} s")


def _family(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _stop(processes: list[psutil.Process], groups: list[int]) -> None:
    """Kill what is left of the processes we started, by process group and by pid."""
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for proc in processes:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(processes, timeout=10)


@pytest.mark.release
@pytest.mark.course
def test_playground_runs_and_redraws_in_jupyterlab(tmp_path):
    reason = _missing()
    if reason:
        pytest.skip(reason)
    from selenium import webdriver

    course = tmp_path / "course"
    (course / "notebooks").mkdir(parents=True)
    for name in ("18_playground.ipynb", "lesson18_samples.py", "lesson18_settings.py"):
        shutil.copy(ROOT / "notebooks" / name, course / "notebooks" / name)
    port, token = _free_port(), secrets.token_hex(16)
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "MPLBACKEND": "",
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    started = time.perf_counter()
    with open(tmp_path / "lab.log", "w") as log:
        server = subprocess.Popen(
            _lab_command(port, token, course),
            cwd=course,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    driver, service, seen = None, None, []
    try:

        def answers() -> bool:
            assert server.poll() is None, f"jupyter lab exited: {(tmp_path / 'lab.log').read_text()[-2000:]}"
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as response:
                    return response.status == 200
            except OSError:
                return False

        # Chromium starts while JupyterLab does
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for flag in (*FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"):
            options.add_argument(flag)
        service = webdriver.ChromeService(
            executable_path=str(DRIVER),
            log_output=str(tmp_path / "driver.log"),
            popen_kw={"start_new_session": True},
        )
        driver = webdriver.Chrome(options=options, service=service)
        _wait("JupyterLab answering /api/status", answers, 60)
        marks = {"server up": time.perf_counter() - started}
        driver.set_script_timeout(60)
        driver.get(f"{base}/lab/tree/{NOTEBOOK}?token={token}")
        _wait("JupyterLab's app in the page", lambda: driver.execute_script("return !!window.jupyterapp"), 60)
        assert driver.execute_async_script(RUN_ALL) == "started"
        marks["page loaded, run all"] = time.perf_counter() - started

        outputs = _wait(
            "the notebook's last cell ('workers left alive: 0')",
            lambda: (text := driver.execute_script(OUTPUTS)) and "workers left alive" in text and text,
            90,
        )
        assert "Traceback" not in outputs, outputs[-3000:]
        first = _wait("the playground's first picture", lambda: driver.execute_script(PICTURE), 30)
        marks["notebook ran"] = time.perf_counter() - started
        seen.append(first[0])
        button = next(
            b for b in driver.find_elements("css selector", ".widget-toggle-button") if b.text.strip() == "4"
        )
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click();", button)
        clicked = time.perf_counter()
        redrawn = _wait(
            "a new picture after num_workers = 4",
            lambda: [s for s in driver.execute_script(PICTURE) if s not in seen],
            40,
        )
        picture_s = time.perf_counter() - clicked
        status = _wait("the status line", lambda: driver.execute_script(STATUS), 10)
        assert status[-1].startswith("redrawn in"), status
        picture = driver.find_element("css selector", "img.widget-image")
        driver.execute_script("arguments[0].scrollIntoView({block: 'end'});", picture)
        time.sleep(0.3)
        driver.save_screenshot(str(tmp_path / "playground.png"))
        if os.environ.get("LOADERLAB_SCREENSHOT"):
            shutil.copy(tmp_path / "playground.png", os.environ["LOADERLAB_SCREENSHOT"])
        marks["redrawn"] = time.perf_counter() - started
        print(
            f"playground redrawn {picture_s:.1f} s after the click ({status[-1]}); "
            f"{len(redrawn)} new picture; " + ", ".join(f"{k} at {v:.1f} s" for k, v in marks.items())
        )
    finally:
        stopping = time.perf_counter()
        browser = _family(service.process.pid) if service is not None and service.process else []
        if driver is not None:
            try:
                driver.quit()
            except Exception:  # the browser may be gone already: it is killed below
                pass
        lab = _family(server.pid)
        try:
            request = urllib.request.Request(
                f"{base}/api/shutdown", method="POST", headers={"Authorization": f"token {token}"}
            )
            urllib.request.urlopen(request, timeout=5).close()  # stops the kernels, then the server
            server.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            pass
        shut = time.perf_counter() - stopping
        lab += [p for p in _family(server.pid) if p not in lab]
        groups = [server.pid] + ([service.process.pid] if browser else [])
        _stop(browser + lab, groups)
        server.wait(timeout=10)
    left = [p for p in browser + lab if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, f"left behind: {[p.pid for p in left]}"
    print(f"stopped in {time.perf_counter() - stopping:.1f} s (browser quit and lab shut down: {shut:.1f} s)")
