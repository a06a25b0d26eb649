"""tools/course.py, the one entry point the Makefile calls (`make X` = `python3 tools/course.py X`):
every Makefile target has its command and the other way round, make's variables reach it, the
venv's Python is found per platform, setup runs again only when its inputs change, and the test
commands take their arguments from its tiers. Nothing here installs: --dry-run only."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from course_code import ROOT  # noqa: E402

from tools import course


def _make_n(*args: str) -> list[str]:
    # run under make too
    # as a user's shell has it: no outer make, and the Makefile's defaults (`make check LOAD=1`
    # exports LOAD to every command it runs)
    outer = (
        "MAKEFLAGS",
        "MAKELEVEL",
        "MFLAGS",
        *re.findall(r"^([A-Z_]+) \??=", (ROOT / "Makefile").read_text(), re.M),
    )
    env = {k: v for k, v in os.environ.items() if k not in outer}
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _dry(*args: str) -> list[str]:
    """The commands `course.py ARGS --dry-run` prints (run outside the tiers' own variables,
    which it shows only where they change the environment, in a shell that keeps Python from
    writing bytecode: the test tiers unset that for pytest)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOADERLAB_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run(
        [sys.executable, "tools/course.py", *args, "--dry-run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if line.startswith("+ ")]


def test_every_make_target_is_one_course_command_and_back():
    text = (ROOT / "Makefile").read_text()
    targets = re.findall(r"^([a-z][\w-]*):", text, re.M)
    assert sorted(targets) == sorted(course.COMMANDS)
    for target in targets:
        assert _make_n(target)[0].split()[:3] == ["python3", "tools/course.py", target], target


@pytest.mark.parametrize(
    "make_args, line",
    [
        (["soak", "N=2", "LOAD=1"], "python3 tools/course.py soak --runs 2 --load"),
        (["soak"], "python3 tools/course.py soak --runs 3"),
        (["execute", "NB=notebooks/03_x.ipynb"], "python3 tools/course.py execute notebooks/03_x.ipynb"),
        (["labs", "CHECK=1"], "python3 tools/course.py labs --check"),
        (["lab", "OFFLINE=1"], "python3 tools/course.py lab --offline"),
        (["setup", "PYTHON=/opt/py3.12/bin/python"], "/opt/py3.12/bin/python tools/course.py setup"),
    ],
)
def test_make_variables_reach_course_py(make_args, line):
    assert _make_n(*make_args)[0].strip() == line


@pytest.mark.parametrize(
    "platform, path",
    [("win32", ".venv/Scripts/python.exe"), ("linux", ".venv/bin/python"), ("darwin", ".venv/bin/python")],
)
def test_the_venv_python_per_platform(platform, path):
    assert course.venv_python(Path(".venv"), platform).as_posix() == path


def test_setup_runs_again_only_when_its_inputs_change(tmp_path, monkeypatch):
    venv = tmp_path / ".venv"
    python = course.venv_python(venv)
    python.parent.mkdir(parents=True)
    python.write_text("")
    for name in course.SETUP_INPUTS["dev"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    monkeypatch.setattr(course, "ROOT", tmp_path)
    monkeypatch.setattr(course, "VENV", venv)
    assert not course.is_set_up("lab", venv)
    (venv / course.STAMP_NAME).write_text("")  # the old Makefile's empty stamp
    assert not course.is_set_up("lab", venv)
    calls = []

    class Recorder(course.Runner):
        def __call__(self, argv, env=None, quiet=False, unset=()):
            calls.append([str(a) for a in argv])
            return 0

    assert course.setup(Recorder(), "lab") == 0
    assert calls[0][1:4] == ["-m", "tools.install", "setup"]
    assert [c[1:3] for c in calls] == [
        ["-m", "tools.install"],
        ["-m", "ipykernel"],
        ["-c", "import matplotlib.pyplot"],
    ]
    assert course.is_set_up("lab", venv) and not course.is_set_up("dev", venv)
    calls.clear()
    assert course.setup(Recorder(), "lab") == 0 and calls == []  # nothing changed: nothing runs
    assert course.setup(Recorder(), "dev") == 0 and calls[0][1:5] == ["-m", "tools.install", "setup", "--dev"]
    assert course.is_set_up("lab", venv) and course.is_set_up("dev", venv)
    (tmp_path / "requirements.txt").write_text("numpy==9\n")
    assert not course.is_set_up("lab", venv)


def test_test_commands_run_each_pass_of_their_tier():
    python = course.venv_python()
    for name in ("test", "unit", "notebooks", "test-spawn"):
        passes = course.tier(name)
        lines = _dry(name)
        expected = [
            "+ "
            + " ".join(
                [
                    "PYTHONDONTWRITEBYTECODE=",
                    *(f"{k}={v}" for k, v in env.items()),
                    shlex.join([".venv/bin/python", "-m", "pytest", *args]),
                ]
            )
            for env, args in passes
        ]
        assert lines[-len(passes) :] == expected, (name, lines)
        if name == "test":  # the lint first: ruff, its formatter, mypy, the import contracts, the workflow
            venv = python.relative_to(ROOT).as_posix()
            ruff, formatted, mypy, contracts, workflow = lines[-len(passes) - 5 : -len(passes)]
            assert ruff.startswith(f"+ {venv} -m ruff check") and mypy == f"+ {venv} -m mypy"
            assert formatted.startswith(f"+ {venv} -m ruff format --check --force-exclude loaderlab")
            assert contracts.endswith("lint-imports --no-cache")
            assert workflow.startswith(f"+ {venv} -m check_jsonschema --builtin-schema vendor.github-")


def test_the_wheelhouse_command_runs_its_own_module_with_the_rooms_options():
    lines = _dry("wheelhouse", "--platforms", "all", "--pythons", "3.12")
    assert lines[-1] == "+ .venv/bin/python -m tools.wheelhouse --platforms all --pythons 3.12", lines


def test_a_missing_tier_is_one_sentence(monkeypatch, capsys):
    monkeypatch.setattr(course, "is_set_up", lambda level, venv=None: True)

    def tier(name):
        raise LookupError(f"no test tier {name!r}")

    monkeypatch.setattr(course, "tier", tier)
    assert course.main(["check", "--dry-run"]) == 2
    assert capsys.readouterr().out == "course.py check: no test tier 'check'\n"


def test_the_first_failing_pass_gives_the_status_and_every_pass_runs(monkeypatch):
    monkeypatch.setattr(course, "lint", lambda run, python: 0)
    statuses = iter([1, 0])
    calls = []

    def run(argv, env=None, **kwargs):
        calls.append(argv)
        return next(statuses)

    assert course.test(run, "test", []) == 1 and len(calls) == 2
    statuses = iter([0, 5])  # the timing pass selected nothing: no failure
    assert course.test(run, "unit", []) == 0


def test_preflight_and_student_need_no_setup(tmp_path, monkeypatch):
    monkeypatch.setattr(course, "VENV", tmp_path / "no-venv")
    calls = []
    monkeypatch.setattr(course.Runner, "__call__", lambda self, argv, **kw: calls.append(argv) or 0)
    assert course.main(["preflight"]) == 0 and course.main(["student"]) == 0
    assert [[str(a) for a in c] for c in calls] == [
        [sys.executable, "tools/preflight.py"],
        [sys.executable, "tools/make_student.py"],
    ]


def test_an_unsupported_python_does_not_create_the_venv(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(course, "VENV", tmp_path / ".venv")
    monkeypatch.setattr(course, "SUPPORTED", [(3, 99)])
    assert course.setup(course.Runner(dry_run=True), "lab") == 2
    assert "is not supported: the course runs on Python 3.11, 3.12 or 3.13" in capsys.readouterr().out
    assert not (tmp_path / ".venv").exists()
