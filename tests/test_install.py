"""tools/install.py (`make setup`, `make wheelhouse`, `make lab OFFLINE=1`) and the classroom
JupyterLab settings. Nothing here downloads: pip runs with --dry-run on a torch already installed."""

from __future__ import annotations

import http.server
import importlib.metadata
import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from course_code import ROOT

spec = importlib.util.spec_from_file_location("install", ROOT / "tools" / "install.py")
install = importlib.util.module_from_spec(spec)
spec.loader.exec_module(install)
TORCH_PIN = f"torch=={importlib.metadata.version('torch').split('+')[0]}\n"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the with block ends


def _setup(*args: str, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    result = subprocess.run([sys.executable, "tools/install.py", "setup", "--dry-run", *args], cwd=ROOT,
                            env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    return result, time.monotonic() - start


@pytest.mark.course
def test_unreachable_cpu_index_falls_back_to_the_default_index_fast(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(TORCH_PIN)
    index = f"http://127.0.0.1:{_closed_port()}/whl/cpu"
    result, seconds = _setup("--requirements", str(requirements), TORCH_INDEX=index)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{index} did not answer" in result.stdout and "torch comes from the default index" in result.stdout
    pips = [line for line in result.stdout.splitlines() if line.startswith("+ pip")]
    assert pips == [f"+ pip install --disable-pip-version-check -q --dry-run -r {requirements}"]
    assert seconds < 15, f"the fallback took {seconds:.1f} s"  # margin: a dry run of seconds


@pytest.mark.course
def test_an_index_that_never_answers_is_given_up_after_the_probe_timeout():
    with socket.socket() as silent:  # accepts connections (backlog) but never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        start = time.monotonic()
        assert not install.answers(f"http://127.0.0.1:{silent.getsockname()[1]}/whl/cpu", timeout=1.0)
        assert time.monotonic() - start < 3  # the 1 s timeout + 2 s of margin; no timeout: never


def _record_pip(monkeypatch) -> list[list[str]]:
    calls: list[list[str]] = []
    monkeypatch.setattr(install, "pip", lambda args: calls.append(args) or 0)
    return calls


def test_an_index_that_serves_torch_answers_and_is_used_for_torch(tmp_path, monkeypatch):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "index.html").write_text("<a href='torch-2.13.0+cpu.whl'>torch</a>")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(TORCH_PIN)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(tmp_path), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert install.answers(f"http://127.0.0.1:{server.server_address[1]}/", timeout=5)
        assert not install.answers(f"http://127.0.0.1:{server.server_address[1]}/", project="nothing", timeout=5)
        index = f"http://127.0.0.1:{server.server_address[1]}/"
        calls = _record_pip(monkeypatch)
        assert install.torch_first(requirements, index, ["--dry-run"]) is True
        assert calls == [["install", *install.QUIET, "--dry-run", "--no-deps", "--timeout", "30", "--retries", "1",
                          "--index-url", index, TORCH_PIN.strip()]]
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("environ, platform, index", [
    ({}, "linux", install.CPU_INDEX),
    ({}, "darwin", None),
    ({}, "win32", None),
    ({"TORCH_INDEX": "https://download.pytorch.org/whl/cu126"}, "linux", "https://download.pytorch.org/whl/cu126"),
    ({"TORCH_INDEX": "default"}, "linux", None),
    ({"TORCH_INDEX": ""}, "linux", None),
])
def test_torch_index_choice(environ, platform, index):
    assert install.torch_index(environ, platform) == index


def test_offline_installs_from_the_wheelhouse_only(tmp_path, monkeypatch, capsys):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(TORCH_PIN)
    calls = _record_pip(monkeypatch)
    assert install.setup(requirements, True, tmp_path / "missing", dry_run=True) == 1
    assert calls == [] and "OFFLINE=1: no torch wheel in" in capsys.readouterr().out
    (tmp_path / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    monkeypatch.setattr(install, "answers", lambda *a, **k: pytest.fail("offline must not probe an index"))
    assert install.setup(requirements, True, tmp_path, dry_run=True) == 0
    assert calls == [["install", *install.QUIET, "--dry-run", "--no-index", "--find-links", str(tmp_path),
                      "-r", str(requirements)]]


def _schema_errors(overrides: dict) -> list[str]:
    """Keys or values of the overrides that JupyterLab's installed schemas do not accept."""
    errors = []
    schemas = Path(sys.prefix) / "share" / "jupyter" / "lab" / "schemas"
    for plugin, settings in overrides.items():
        package, name = plugin.split(":")
        path = schemas / package / f"{name}.json"
        if not path.is_file():
            errors.append(f"no plugin {plugin}")
            continue
        properties = json.loads(path.read_text())["properties"]
        for key, value in settings.items():
            allowed = [choice["const"] for choice in properties.get(key, {}).get("oneOf", [])]
            kind = {"boolean": bool, "string": str}.get(properties.get(key, {}).get("type"), object)
            if key not in properties or not isinstance(value, kind) or (allowed and value not in allowed):
                errors.append(f"{plugin}: {key}={value!r}")
    return errors


@pytest.mark.course
def test_installed_lab_settings_stop_the_news_prompt_and_name_the_kernel(tmp_path):
    targets = {source: Path(sys.prefix) / target for source, target in install.LAB_SETTINGS.items()}
    for source, target in targets.items():
        assert target.is_file(), f"{target} missing: `make setup` installs it"
        assert json.loads(target.read_text()) == json.loads((ROOT / source).read_text()), f"{target} is stale"
    overrides = json.loads(targets["jupyter/overrides.json"].read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"] == {"fetchNews": "false", "checkForUpdates": False}
    assert _schema_errors(overrides) == []
    server = json.loads(targets["jupyter/jupyter_server_config.json"].read_text())
    assert server["MappingKernelManager"]["default_kernel_name"] == "loaderlab"
    lab_spec = importlib.util.spec_from_file_location("lab_server", ROOT / "tools" / "lab_server.py")
    lab_server = importlib.util.module_from_spec(lab_spec)
    lab_spec.loader.exec_module(lab_server)
    opens = [a.split("/lab/tree/", 1)[1] for a in lab_server.server_command() if a.startswith("--LabApp.default_url=")]
    assert opens == ["notebooks/00_start_here.ipynb"] and (ROOT / opens[0]).is_file()  # the start notebook
    written = install.install_lab_settings(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in written] == list(install.LAB_SETTINGS.values())
