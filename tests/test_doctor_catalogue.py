"""The doctor's catalogue (notebooks/lesson17_loaders.py, written by notebook 17's cells): every
broken loader gets its finding code with ``--fail-on warning`` (exit 1), every fixed counterpart
exits 0; together with tests/test_doctor.py every code of the registry is triggered by a test."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
from pathlib import Path

import pytest
from course_code import lesson
from jsonschema import validate

from loaderlab.__main__ import main
from loaderlab.doctor import FINDINGS, JSON_SHAPE

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
sys.path.insert(0, str(NOTEBOOKS))  # spawn workers and the command line import the lesson modules by name
cat = lesson("lesson17_loaders")
# codes no catalogue loader is about, and the test of tests/test_doctor.py that triggers each
ELSEWHERE = {
    "loader.raises": "test_a_dataset_that_raises_is_reported_not_raised",
    "pickle.main_module": "test_a_class_defined_in_main_is_a_spawn_warning",
    "speed.workers_slower": "test_speed_notes_need_a_difference_beyond_noise",
    "speed.workers_over_cores": "test_more_workers_than_cores_is_a_note_and_torchs_warning_is_not_repeated",
}


def doctor_cli(name: str, options: list[str], as_json: bool = False) -> tuple[int, str]:
    args = ["doctor", "--no-progress", "--fail-on", "warning", "--time-budget", "10", *options]
    with contextlib.redirect_stdout(io.StringIO()) as out:
        status = main([*args, *(["--json"] if as_json else []), f"lesson17_loaders:{name}"])
    return status, out.getvalue()


@pytest.mark.course
@pytest.mark.parametrize("broken", list(cat.CATALOGUE))
def test_broken_loader_gets_its_code_and_its_fix_gets_no_warning(broken, no_leaked_workers):
    code, fixed, options, fixed_options = cat.CATALOGUE[broken]
    start = time.perf_counter()
    status, text = doctor_cli(broken, options, as_json=True)
    report = json.loads(text)
    validate(report, JSON_SHAPE)
    assert status == 1 and code in [f["code"] for f in report["findings"] if f["severity"] != "info"], text
    finding = next(f for f in report["findings"] if f["code"] == code)
    assert finding["figures"] and finding["link"].startswith("notebooks/") and finding["fix"]
    status, text = doctor_cli(fixed, [*options, *fixed_options])
    assert status == 0 and "[warning]" not in text and "[error]" not in text, text
    assert time.perf_counter() - start < 30  # margin: two runs of at most their 15 s budget


def test_every_finding_code_is_triggered_by_a_test():
    tests = Path(__file__).with_name("test_doctor.py").read_text()
    for code, name in ELSEWHERE.items():  # the named test exists and asserts on its code
        assert f"def {name}(" in tests and f'"{code}"' in tests.split(f"def {name}(")[1].split("\ndef ")[0]
    assert set(cat.BROKEN.values()) | set(ELSEWHERE) == set(FINDINGS)
    assert len(cat.CATALOGUE) >= 16


def test_no_fix_text_recommends_losing_data():
    for code in ("iterable.lost_items", "iterable.partial_batches", "distributed.drops"):
        fix = FINDINGS[code].fix
        assert "drop_last=True" not in fix or "no fix" in fix, (code, fix)
    assert not any("pack_rows" in s.message + s.fix for s in FINDINGS.values())
