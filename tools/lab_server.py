"""Start JupyterLab on the course (`make lab`). The smoke test builds the same command.

Listens on 127.0.0.1 only, with Jupyter's normal random token (printed in the log with the
URL to open). ``--allow-root`` is added only when running as root (containers, Colab-like VMs).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START_NOTEBOOK = "notebooks/00_start_here.ipynb"


def server_command(port: int | None = None, token: str | None = None, browser: bool = True) -> list[str]:
    """Return the argv that starts JupyterLab on the course root."""
    argv = [
        sys.executable, "-m", "jupyter", "lab",
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


if __name__ == "__main__":
    argv = server_command(browser="--no-browser" not in sys.argv)
    os.execv(argv[0], argv)
