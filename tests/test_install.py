"""tools/install.py (`make setup`, `make lab OFFLINE=1`) and the classroom
JupyterLab settings. Nothing here downloads: pip runs with --dry-run, on a torch already installed
or on small stand-in torch wheels (a CPU-like one, a CUDA-like one naming NVIDIA packages) in a
folder that is the only index (PIP_NO_INDEX, PIP_FIND_LINKS)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from course_code import ROOT, static_server

from tools import install

TORCH_PIN = f"torch=={importlib.metadata.version('torch').split('+')[0]}\n"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the with block ends


def _setup(*args: str, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "tools.install", "setup", "--dry-run", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result, time.monotonic() - start


STAND_IN = "2.12.0"  # not the installed torch (which setup keeps), within this machine's pip constraints
CUDA_NEEDS = ['nvidia-cublas-cu12==12.8.4.1; platform_system == "Linux"', "filelock"]


def _stand_in_index(folder: Path, needs: list[str]) -> Path:
    """A folder holding a tiny torch wheel (version STAND_IN) whose metadata requires ``needs``."""
    folder.mkdir()
    info = f"torch-{STAND_IN}.dist-info"
    with zipfile.ZipFile(folder / f"torch-{STAND_IN}-py3-none-any.whl", "w") as wheel:
        wheel.writestr(
            f"{info}/METADATA",
            f"Metadata-Version: 2.1\nName: torch\nVersion: {STAND_IN}\n"
            + "".join(f"Requires-Dist: {need}\n" for need in needs),
        )
        wheel.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        wheel.writestr(f"{info}/RECORD", "")
    return folder


def _only_index(folder: Path) -> dict[str, str]:
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(folder)}


@pytest.mark.course
def test_default_build_tells_cpu_from_cuda_by_the_wheels_dependencies(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"torch=={STAND_IN}\n")
    for name, needs, build in (("cpu", [], "cpu"), ("cuda", CUDA_NEEDS, "cuda")):
        folder = _stand_in_index(tmp_path / name, needs)
        assert install.default_build(requirements, ["--no-index", "--find-links", str(folder)]) == (
            build,
            f"torch-{STAND_IN}-py3-none-any.whl",
        )
    empty = tmp_path / "empty"
    empty.mkdir()
    build, why = install.default_build(requirements, ["--no-index", "--find-links", str(empty)])
    assert build == "unknown" and why.startswith("pip could not resolve torch"), why


@pytest.mark.course
def test_unreachable_cpu_index_and_a_cuda_default_stop_and_say_how_to_opt_in(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"torch=={STAND_IN}\n")
    index = f"http://127.0.0.1:{_closed_port()}/whl/cpu"
    folder = _stand_in_index(tmp_path / "cuda", CUDA_NEEDS)
    result, seconds = _setup("--requirements", str(requirements), TORCH_INDEX=index, **_only_index(folder))
    assert result.returncode == install.STOPPED, result.stdout + result.stderr
    out = result.stdout
    assert f"{index} did not answer" in out and "serves the CUDA build" in out, out
    assert "nothing installed" in out and "TORCH_INDEX=default make setup" in out and "2.74 GB" in out, out
    assert not [line for line in out.splitlines() if line.startswith("+ pip")], out
    assert seconds < 30, f"stopping took {seconds:.1f} s"


@pytest.mark.course
def test_unreachable_cpu_index_and_a_cpu_default_go_on_with_the_default_index(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"torch=={STAND_IN}\n")
    index = f"http://127.0.0.1:{_closed_port()}/whl/cpu"
    folder = _stand_in_index(tmp_path / "cpu", [])
    result, seconds = _setup("--requirements", str(requirements), TORCH_INDEX=index, **_only_index(folder))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"your default index serves a CPU build (torch-{STAND_IN}-py3-none-any.whl)" in result.stdout
    pips = [line for line in result.stdout.splitlines() if line.startswith("+ pip")]
    assert pips == [f"+ pip install --disable-pip-version-check -q --dry-run -r {requirements}"]
    assert seconds < 30, f"going on took {seconds:.1f} s"


def test_a_torch_that_satisfies_the_pin_is_kept_without_asking_any_index(tmp_path, monkeypatch, capsys):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(TORCH_PIN)
    monkeypatch.setattr(install, "answers", lambda *a, **k: pytest.fail("a kept torch needs no index"))
    calls = _record_pip(monkeypatch)
    assert install.torch_first(requirements, install.CPU_INDEX, []) is True
    assert calls == [] and "is installed already: kept" in capsys.readouterr().out


def test_a_failed_install_from_the_cpu_index_stops(tmp_path, monkeypatch, capsys):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(TORCH_PIN)
    monkeypatch.setattr(install, "installed_torch", lambda: None)
    monkeypatch.setattr(install, "answers", lambda *a, **k: True)
    monkeypatch.setattr(install, "pip", lambda args: 1)
    assert install.torch_first(requirements, install.CPU_INDEX, []) is False
    out = capsys.readouterr().out
    assert (
        f"installing {TORCH_PIN.strip()} from {install.CPU_INDEX} failed" in out
        and "TORCH_INDEX=default" in out
    )
    monkeypatch.setattr(install, "torch_first", lambda *a, **k: False)
    assert install.setup(requirements, False, tmp_path, dry_run=True) == install.STOPPED


@pytest.mark.course
@pytest.mark.timing
def test_an_index_that_never_answers_is_given_up_after_the_probe_timeout():
    with socket.socket() as silent:  # accepts connections (backlog) but never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        start = time.monotonic()
        assert not install.answers(f"http://127.0.0.1:{silent.getsockname()[1]}/whl/cpu", timeout=1.0)
        assert time.monotonic() - start < 3


def _record_pip(monkeypatch) -> list[list[str]]:
    calls: list[list[str]] = []
    monkeypatch.setattr(install, "pip", lambda args: calls.append(args) or 0)
    return calls


def test_an_index_that_serves_torch_answers_and_is_used_for_torch(tmp_path, monkeypatch):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "index.html").write_text("<a href='torch-2.13.0+cpu.whl'>torch</a>")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(TORCH_PIN)

    with static_server(tmp_path) as index:
        assert install.answers(index, timeout=5)
        assert not install.answers(index, project="nothing", timeout=5)
        calls = _record_pip(monkeypatch)
        monkeypatch.setattr(install, "installed_torch", lambda: None)  # as in a new .venv
        assert install.torch_first(requirements, index, ["--dry-run"]) is True
        assert calls == [
            [
                "install",
                *install.QUIET,
                "--dry-run",
                "--no-deps",
                "--timeout",
                "30",
                "--retries",
                "1",
                "--index-url",
                index,
                TORCH_PIN.strip(),
            ]
        ]


@pytest.mark.parametrize(
    "environ, platform, index",
    [
        ({}, "linux", install.CPU_INDEX),
        ({}, "darwin", None),
        ({}, "win32", None),
        (
            {"TORCH_INDEX": "https://download.pytorch.org/whl/cu126"},
            "linux",
            "https://download.pytorch.org/whl/cu126",
        ),
        ({"TORCH_INDEX": "default"}, "linux", None),
        ({"TORCH_INDEX": ""}, "linux", None),
    ],
)
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
    assert calls == [
        [
            "install",
            *install.QUIET,
            "--dry-run",
            "--no-index",
            "--find-links",
            str(tmp_path),
            "-r",
            str(requirements),
        ]
    ]


def test_the_dev_install_adds_requirements_dev(tmp_path, monkeypatch):
    requirements, dev = tmp_path / "requirements.txt", tmp_path / "requirements-dev.txt"
    requirements.write_text(TORCH_PIN)
    dev.write_text("pytest\n")
    monkeypatch.setattr(install, "torch_first", lambda *a, **k: True)
    calls = _record_pip(monkeypatch)
    assert install.setup(requirements, False, tmp_path, dry_run=True) == 0
    assert install.setup(requirements, False, tmp_path, dry_run=True, dev=dev) == 0
    assert calls == [
        ["install", *install.QUIET, "--dry-run", "-r", str(requirements)],
        ["install", *install.QUIET, "--dry-run", "-r", str(requirements), "-r", str(dev)],
    ]


def test_students_get_no_test_lint_or_site_tools():
    def names(path: Path) -> set[str]:
        lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
        return {line.split("==")[0].lower() for line in lines if line}

    student, dev = names(ROOT / "requirements.txt"), names(ROOT / "requirements-dev.txt")
    tools = {
        "pytest",
        "pytest-xdist",
        "nbval",
        "ruff",
        "selenium",
        "mkdocs",
        "mkdocs-material",
        "mkdocs-jupyter",
    }
    assert tools <= dev and not tools & student and not student & dev


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
    assert overrides["@jupyterlab/apputils-extension:notification"] == {
        "fetchNews": "false",
        "checkForUpdates": False,
    }
    assert _schema_errors(overrides) == []
    server = json.loads(targets["jupyter/jupyter_server_config.json"].read_text())
    assert server["MappingKernelManager"]["default_kernel_name"] == "loaderlab"
    from tools import lab_server

    opens = [
        a.split("/lab/tree/", 1)[1]
        for a in lab_server.server_command()
        if a.startswith("--LabApp.default_url=")
    ]
    assert opens == ["notebooks/00_start_here.ipynb"] and (ROOT / opens[0]).is_file()  # the start notebook
    written = install.install_lab_settings(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in written] == list(install.LAB_SETTINGS.values())


def _fake_install(monkeypatch, with_uv: list[str] | None, uv_status: int = 0):
    """setup's steps recorded: pip's arguments, uv's commands and the bytecode warm-up."""
    monkeypatch.setattr(install, "torch_first", lambda *a, **k: True)
    monkeypatch.setattr(install, "install_lab_settings", lambda: [])
    monkeypatch.setattr(install, "uv_installer", lambda: with_uv)
    warmed: list[bool] = []
    monkeypatch.setattr(install, "warm_bytecode", warmed.append)
    uv_runs: list[list[str]] = []

    def run(argv, **kwargs):
        if argv[:3] == [sys.executable, "-m", "pip"]:  # pip config list
            return subprocess.CompletedProcess(argv, 0, "global.find-links='/opt/nowhere /'\n", "")
        uv_runs.append(argv)
        return subprocess.CompletedProcess(argv, uv_status)

    monkeypatch.setattr(install.subprocess, "run", run)
    return _record_pip(monkeypatch), uv_runs, warmed


def test_a_learners_install_uses_pip_and_writes_the_bytecode_of_what_the_course_imports(
    tmp_path, monkeypatch
):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(TORCH_PIN)
    calls, uv_runs, warmed = _fake_install(monkeypatch, with_uv=["uv", "pip", "install"])
    assert install.setup(requirements, False, tmp_path, dry_run=False) == 0  # no dev: no uv
    assert calls == [
        ["install", *install.QUIET, "--no-compile", install.PIP],  # a faster pip first
        ["install", *install.QUIET, "--no-compile", "-r", str(requirements)],
        ["install", *install.QUIET, "--no-compile", "--no-deps", "-e", str(ROOT)],
    ]
    assert uv_runs == [] and warmed == [False]


def test_the_maintainers_install_uses_uv_with_pips_sources_and_pip_if_uv_fails(tmp_path, monkeypatch):
    requirements, dev = tmp_path / "requirements.txt", tmp_path / "requirements-dev.txt"
    requirements.write_text(TORCH_PIN)
    dev.write_text("pytest\n")
    uv = ["uv", "pip", "install"]
    calls, uv_runs, warmed = _fake_install(monkeypatch, with_uv=uv)
    assert install.setup(requirements, False, tmp_path, dry_run=False, dev=dev) == 0
    sources = ["--index-strategy", "unsafe-best-match", "--find-links", "/"]  # /opt/nowhere left out
    assert uv_runs == [
        [*uv, *sources, "-r", str(requirements), "-r", str(dev), install.PIP],
        [*uv, *sources, "--no-deps", "-e", str(ROOT)],
    ]
    assert calls == [] and warmed == [True]
    calls, uv_runs, warmed = _fake_install(monkeypatch, with_uv=uv, uv_status=1)
    assert install.setup(requirements, False, tmp_path, dry_run=False, dev=dev) == 0
    assert len(uv_runs) == 1 and calls == [
        ["install", *install.QUIET, "--no-compile", install.PIP],
        ["install", *install.QUIET, "--no-compile", "-r", str(requirements), "-r", str(dev)],
        ["install", *install.QUIET, "--no-compile", "--no-deps", "-e", str(ROOT)],
    ]


def test_uv_is_given_the_places_pip_is_configured_to_look(tmp_path):
    listing = "\n".join(
        [
            f"global.extra-index-url='https://mirror.example/simple file:///no/such {tmp_path.as_uri()}'",
            f"global.find-links='{tmp_path}'",
            "global.index-url='https://global.example/simple'",
            "install.index-url='https://install.example/simple'",
            ":env:.index-url='https://env.example/simple'",
            f"global.constraint='{tmp_path}'",
            ":env:.no-index='true'",
            f"global.cert='{__file__}'",
            "global.timeout='60'",
        ]
    )
    configuration = install.pip_configuration(listing)
    assert configuration["index-url"] == "https://env.example/simple"  # a PIP_ variable wins
    options, env = install.uv_sources(configuration)
    assert options == [
        "--index-strategy",
        "unsafe-best-match",
        "--index-url",
        "https://env.example/simple",
        "--extra-index-url",
        "https://mirror.example/simple",
        "--extra-index-url",
        tmp_path.as_uri(),
        "--find-links",
        str(tmp_path),
        "--no-index",
        "-c",
        str(tmp_path),
    ]
    assert env == {"SSL_CERT_FILE": __file__}
    assert install.uv_sources({}) == (["--index-strategy", "unsafe-best-match"], {})


def test_the_warm_up_writes_bytecode_even_where_the_shell_forbids_it(tmp_path, monkeypatch):
    (tmp_path / "warm_me.py").write_text("VALUE = 1\n")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(install, "WARM", ["warm_me", "no_such_module_here"])  # one that fails: skipped
    install.warm_bytecode(dev=False)
    assert [p.name.split(".")[0] for p in (tmp_path / "__pycache__").iterdir()] == ["warm_me"]


def test_setup_installs_a_faster_pip_first_where_it_can(tmp_path, monkeypatch, capsys):
    calls = _record_pip(monkeypatch)
    install.upgrade_pip(offline=True, wheelhouse=tmp_path)  # a wheelhouse without pip: left alone
    assert calls == []
    (tmp_path / "pip-26.3-py3-none-any.whl").write_bytes(b"")
    install.upgrade_pip(offline=True, wheelhouse=tmp_path)
    assert calls == [
        ["install", *install.QUIET, "--no-compile", "--no-index", "--find-links", str(tmp_path), install.PIP]
    ]
    monkeypatch.setattr(install, "pip", lambda args: 1)  # no network, no such version: go on
    install.upgrade_pip(offline=False, wheelhouse=tmp_path)
    assert (
        capsys.readouterr().out
        == f"could not install {install.PIP}: the course installs with the pip this Python has\n"
    )
