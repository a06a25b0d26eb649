"""Start JupyterLab on the course (`make lab`). The smoke test builds the same command.

Listens on 127.0.0.1 only, with Jupyter's normal random token (printed in the log with the
URL to open). ``--allow-root`` is added only when running as root (containers, Colab-like VMs).
It opens the start notebook; the classroom settings (no news pop-up, the course's kernel as the
default) are installed into .venv by `make setup` from jupyter/. ``started()`` runs a server
for a check (`make preflight`) and stops it with everything it started.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START_NOTEBOOK = "notebooks/00_start_here.ipynb"


def server_command(port: int | None = None, token: str | None = None, browser: bool = True) -> list[str]:
    """Return the argv that starts JupyterLab on the course root."""
    argv = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={ROOT}",
        f"--LabApp.default_url=/lab/tree/{START_NOTEBOOK}",
    ]
    if port is not None:
        argv += [f"--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    if token is not None:
        argv.append(f"--IdentityProvider.token={token}")
    if not browser:
        argv.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")
    return argv


def get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    """(HTTP status, body) of ``url``; status 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, b""
    except OSError:
        return 0, b""


def stop(server: subprocess.Popen) -> int:
    """Stop ``server`` and every process it started; return how many could not be stopped."""
    import psutil

    try:
        family = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    server.terminate()
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=10)
    _, alive = psutil.wait_procs(family, timeout=5)
    for proc in alive:
        proc.kill()
    return len(psutil.wait_procs(alive, timeout=5)[1])


@contextmanager
def started(timeout: float = 45.0) -> Iterator[Callable[[str], tuple[int, bytes]]]:
    """Run JupyterLab on a free port with a random token; yield ``request(path) -> (status,
    body)`` once it answers. Raises RuntimeError (one sentence, with its last log line) when it
    does not answer within ``timeout`` s; on exit stops it (RuntimeError if a process outlives it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token, log, start = secrets.token_hex(16), tempfile.TemporaryFile(), time.monotonic()
    server = subprocess.Popen(
        server_command(port=port, token=token, browser=False), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log
    )

    def request(path: str) -> tuple[int, bytes]:
        return get(f"http://127.0.0.1:{port}{path}{'&' if '?' in path else '?'}token={token}")

    left = 0
    try:
        while request("/api/status")[0] != 200:
            if server.poll() is not None or time.monotonic() - start > timeout:
                log.seek(0)
                lines = [ln.strip() for ln in log.read().decode(errors="replace").splitlines() if ln.strip()]
                raise RuntimeError(
                    f"JupyterLab did not start within {timeout:.0f} s ({(lines or ['no output'])[-1][:120]})"
                )
            time.sleep(0.3)
        yield request
    finally:
        left = stop(server)
        log.close()
    if left:
        raise RuntimeError(f"{left} of JupyterLab's processes outlived it")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tools.lab_server", description=__doc__.split("\n")[0] if __doc__ else None
    )
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    command = server_command(browser=not parser.parse_args(argv).no_browser)
    if sys.platform == "win32":  # Windows has no exec: os.execv would return to the shell at once
        sys.exit(subprocess.call(command, cwd=ROOT))
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
