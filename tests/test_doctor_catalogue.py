"""The doctor's catalogue (loaderlab/doctor/catalogue.py), through the command line as a user types it:
``python -m loaderlab doctor loaderlab.doctor.catalogue:NAME --fail-on warning`` exits 1 on every broken
loader and names its finding, and exits 0 on its fixed counterpart; nothing but the progress bar
reaches stderr (torch's warnings become findings). One pair, and the text report of another
loader, run in a fresh interpreter as typed; the others through the same command line's ``main``
in this process (each fresh interpreter costs about 2 s of CPU importing torch, on a suite that is
CPU-bound). Together with tests/test_doctor.py every code of the registry is triggered by a test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jsonschema import validate

from loaderlab.cores import usable_cores
from loaderlab.doctor import FINDINGS, JSON_SHAPE, PROBES
from loaderlab.doctor import catalogue as cat

TESTS = Path(__file__).resolve().parent
CATALOGUE = "loaderlab.doctor.catalogue"  # the module a user names on the command line

# codes no catalogue loader is about, and the test of tests/test_doctor.py that triggers each
ELSEWHERE = {
    "loader.raises": "test_a_dataset_that_raises_is_reported_not_raised",
    "pickle.main_module": "test_a_class_defined_in_main_is_a_spawn_warning",
    "speed.workers_slower": "test_speed_notes_need_a_difference_beyond_noise",
    "torch.worker_count": "test_torchs_warnings_become_findings_with_their_own_codes",
    "torch.pin_memory": "test_torchs_warnings_become_findings_with_their_own_codes",
    "torch.iterable_length": "test_torchs_warnings_become_findings_with_their_own_codes",
    "distributed.no_set_epoch": "test_set_epoch_is_a_note_with_the_recipe_since_the_loop_is_not_seen",
}
AS_TYPED = "broken_read_only_array"  # the pair run in a fresh interpreter, `--json` as a user types it
NEW_IN_V3 = [
    "broken_weights_per_class",
    "broken_too_few_workers",
    "broken_oversubscribed",
    "broken_stream_batch_of_1",
    "broken_stream_length",
    "broken_read_only_array",
]
NEW_IN_V4 = [
    "broken_corrupt_sample",
    "broken_none_sample",
    "broken_len_too_long",
    "broken_pil_images",
    "broken_float64_rows",
    "broken_batches_of_batches",
    "broken_threads_in_workers",
    "broken_eval_transforms",
    "broken_sequential_drop_last",
]  # + broken_hdf5_handle (h5py)
NAMED = {  # what the broken loader's report must say: the index, __len__, the conversion
    "broken_corrupt_sample": "sample 137 raises OSError",
    "broken_none_sample": "sample 3 is None",
    "broken_len_too_long": "__len__ says 64 but indices 50 to 63",
    "broken_pil_images": "PILToTensor()",
}


def doctor_cli(name: str, options: list[str], as_json: bool = False) -> tuple[int, str, str]:
    """Run ``python -m loaderlab doctor loaderlab.doctor.catalogue:NAME --fail-on warning OPTIONS``."""
    args = [
        sys.executable,
        "-m",
        "loaderlab",
        "doctor",
        f"{CATALOGUE}:{name}",
        "--fail-on",
        "warning",
        *options,
        *(["--json"] if as_json else []),
    ]
    env = {k: v for k, v in os.environ.items() if k != "LOADERLAB_TEST_MODE"}  # the bar a user sees
    done = subprocess.run(args, cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def doctor_main(name: str, options: list[str], capfd, as_json: bool = False) -> tuple[int, str, str]:
    """The same command line through ``loaderlab.doctor.cli.main`` in this process."""
    from loaderlab.doctor.cli import main

    capfd.readouterr()
    args = [f"{CATALOGUE}:{name}", "--fail-on", "warning", *options, *(["--json"] if as_json else [])]
    status = main(args)
    out, err = capfd.readouterr()
    return status, out, err


def raw_stderr(err: str) -> list[str]:
    """Return what stderr holds besides the progress bar's redrawn lines ("doctor: ...")."""
    parts = err.replace("\r", "\n").splitlines()
    return [part for part in parts if part.strip() and not part.startswith("doctor")]


# The threads pair judges CPU time per thread during a worker's fetches (/proc/self/task/*/schedstat),
# never wall time: contention slows a pool thread, it cannot make an idle one work, so the pair runs
# in the check tier beside other tests.
@pytest.mark.course
@pytest.mark.parametrize("broken", list(cat.CATALOGUE))
def test_broken_loader_exits_1_naming_its_finding_and_its_fix_exits_0(broken, no_leaked_workers, capfd):
    code, fixed, options, fixed_options = cat.CATALOGUE[broken]
    if broken == "broken_oversubscribed" and usable_cores() > 8:
        pytest.skip("6 workers per core: this case stays small on at most 8 cores")
    if broken == "broken_threads_in_workers" and usable_cores() < 2:
        pytest.skip("not measured here: on 1 core NumPy's BLAS runs 1 thread per worker")
    start = time.perf_counter()
    if broken == AS_TYPED:
        doctor_cli_run = doctor_cli
    else:

        def doctor_cli_run(name, options, as_json=False):
            return doctor_main(name, options, capfd, as_json)

    status, text, err = doctor_cli_run(broken, options, as_json=True)
    assert err == "", err  # --json shows no bar: stderr holds nothing at all
    report = json.loads(text)
    validate(report, JSON_SHAPE)
    assert status == 1 and code in [f["code"] for f in report["findings"] if f["severity"] != "info"], text
    finding = next(f for f in report["findings"] if f["code"] == code)
    assert finding["figures"] and finding["link"].startswith("notebooks/") and finding["fix"]
    assert NAMED.get(broken, "") in finding["message"] + finding["fix"], finding
    causes = [f for f in report["findings"] if f["severity"] == "error"]
    assert len(causes) <= 2 and "loader.raises" not in [f["code"] for f in causes], causes  # one per cause
    chosen = options[options.index("--probes") + 1].split(",") if "--probes" in options else PROBES
    assert [p["name"] for p in report["probes"]] == [p for p in PROBES if p in chosen]  # each listed once
    status, text, err = doctor_cli_run(fixed, [*options, *fixed_options])
    assert status == 0 and "[warning]" not in text and "[error]" not in text, text + err
    assert raw_stderr(err) == [], err
    assert "probes run: " in text
    assert time.perf_counter() - start < 60


@pytest.mark.course
def test_the_report_names_the_probes_that_ran_and_why_others_did_not(no_leaked_workers):
    status, text, err = doctor_cli("broken_stream_batch_of_1", [])
    assert status == 1 and "iterable.batch_of_1" in text and raw_stderr(err) == [], err
    ran = next(line for line in text.splitlines() if line.startswith("probes run: "))
    assert "stream " in ran and " s" in ran
    skipped = next(line for line in text.splitlines() if line.startswith("not run: "))
    assert "coverage (no sampler" in skipped and "random (no indexable samples)" in skipped


def test_every_finding_code_is_triggered_by_a_test():
    tests = Path(__file__).with_name("test_doctor.py").read_text()
    for code, name in ELSEWHERE.items():  # the named test exists and asserts on its code
        assert f"def {name}(" in tests and f'"{code}"' in tests.split(f"def {name}(")[1].split("\ndef ")[0]
    assert set(cat.BROKEN.values()) | set(ELSEWHERE) == set(FINDINGS) - (
        {"dataset.open_handle"} - set(cat.BROKEN.values())
    )  # the HDF5 pair needs h5py
    assert set(NEW_IN_V3 + NEW_IN_V4) <= set(cat.CATALOGUE) and len(cat.CATALOGUE) >= 32


@pytest.mark.course
@pytest.mark.parametrize("noted", list(cat.NOTES))
def test_a_note_is_not_a_failure_and_its_fix_clears_it(noted, capfd):
    code, fixed, options, fixed_options = cat.NOTES[noted]
    status, text, _ = doctor_main(noted, options, capfd, as_json=True)
    found = [(f["severity"], f["code"]) for f in json.loads(text)["findings"]]
    assert status == 0 and found == [("info", code)], found  # --fail-on warning: a note passes
    status, text, _ = doctor_main(fixed, [*options, *fixed_options], capfd, as_json=True)
    assert status == 0 and code not in text


def test_no_fix_text_recommends_losing_data_or_the_fragile_seeding():
    for code in ("iterable.partial_batches", "distributed.drops"):
        fix = FINDINGS[code].fix
        assert "drop_last=True" not in fix or "no fix" in fix, (code, fix)
    assert not any("pack_rows" in s.message + s.fix for s in FINDINGS.values())
    for code in ("random.duplicate_across_workers", "random.repeats_across_epochs"):
        fix = FINDINGS[code].fix
        assert "get_worker_info().seed" in fix and "worker_seeding.py" in fix, fix
        assert "info.dataset" not in fix and "worker_init_fn" not in fix and "manual_seed" not in fix, fix
