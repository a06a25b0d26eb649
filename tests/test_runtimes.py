"""The course map's, the headers' and the instructor guide's run times and peak memory come from
the measured files docs/runtimes.json and docs/peak_memory.json, which agree with each notebook's
own record (metadata.loaderlab.record, written by the recorder, tools/record.py)."""

from __future__ import annotations

import nbformat
import pytest
from course_code import ROOT

from tools import runtimes

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[f"{p.parent.name}/{p.name}" for p in NOTEBOOKS])
def test_header_and_course_map_give_the_measured_run_time(path):
    rel = path.relative_to(ROOT).as_posix()
    measured = runtimes.load().get(rel)
    assert measured is not None, f"{rel} has no measured run time: run `make execute NB={rel}`"
    assert runtimes.header_phrase(path) == runtimes.phrase(measured), (
        f"{rel}'s 'Runs in' line disagrees with docs/runtimes.json ({measured} s)"
    )
    if path.parent.name == "notebooks":
        assert runtimes.readme_times()[path.name[:2]] == runtimes.short(measured)
        assert runtimes.instructor_times()[path.name[:2]] == runtimes.short(measured), (
            f"docs/instructor.md's 'run, fork' for {path.name[:2]} disagrees with docs/runtimes.json"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[f"{p.parent.name}/{p.name}" for p in NOTEBOOKS])
def test_header_and_course_map_give_the_measured_peak_memory(path):
    rel = path.relative_to(ROOT).as_posix()
    peak = runtimes.load_peaks().get(rel)
    stated = runtimes.header_memory(path)
    assert stated == (None if peak is None else runtimes.memory_mb(peak)), (
        f"{rel}'s header says peak memory {stated}, docs/peak_memory.json {peak} MB"
    )
    if path.parent.name == "notebooks":
        assert runtimes.readme_memory()[path.name[:2]] == runtimes.memory_short(peak), (
            f"README's peak memory for {path.name[:2]} disagrees with docs/peak_memory.json"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[f"{p.parent.name}/{p.name}" for p in NOTEBOOKS])
def test_the_notebooks_record_agrees_with_the_measured_files(path):
    """The recorder writes the record and both files at once: a hand edit of one shows here."""
    rel = path.relative_to(ROOT).as_posix()
    taken = nbformat.read(path, as_version=4).metadata.get("loaderlab", {}).get("record")
    peak = runtimes.load_peaks().get(rel)
    if taken is None:
        assert peak is None, f"{rel}: docs/peak_memory.json has {peak} MB but the notebook holds no record"
        return
    assert taken["seconds"] == runtimes.load().get(rel) and taken["peak_mb"] == peak, (
        f"{rel}'s record ({taken['seconds']} s, {taken['peak_mb']} MB) disagrees with docs/"
    )
    assert 0 <= taken["idle_cores"] <= taken["cores"]


def test_every_course_map_row_has_its_six_columns():
    text = runtimes.README.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and "](notebooks/" in line]
    assert rows and all(line.count(" | ") == 5 for line in rows), "a course map row lacks a column"
    assert len(runtimes.readme_memory()) == len(rows)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[f"{p.parent.name}/{p.name}" for p in NOTEBOOKS])
def test_each_notebook_alone_runs_within_its_45_s_budget(path):
    """make test runs two at a time with a 90 s budget; alone and idle each must take <= 45 s."""
    taken = nbformat.read(path, as_version=4).metadata.get("loaderlab", {}).get("record", {})
    if "forced" in taken:  # timed on a busy machine: tests/test_record.py fails on it
        pytest.skip(f"{path.name} was recorded with --force: its time is no idle run")
    measured = runtimes.load().get(path.relative_to(ROOT).as_posix())
    assert measured is None or measured <= 45, f"{path.name} took {measured} s alone on an idle machine"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[f"{p.parent.name}/{p.name}" for p in NOTEBOOKS])
def test_each_notebook_peaks_under_2_gb(path):
    """The course promises no notebook over 2 GB on 2 cores (kernel and all its children)."""
    peak = runtimes.load_peaks().get(path.relative_to(ROOT).as_posix())
    assert peak is None or peak <= 2048, f"{path.name} peaked at {peak} MB"


def test_every_measured_notebook_still_exists():
    assert {rel for rel in runtimes.load() if not (ROOT / rel).exists()} == set()
    assert {rel for rel in runtimes.load_peaks() if not (ROOT / rel).exists()} == set()


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(1.2, "about 5 s"), (7.4, "about 5 s"), (7.6, "about 10 s"), (43.0, "about 45 s"), (61, "about 60 s")],
)
def test_run_times_are_rounded_to_five_seconds(seconds, text):
    assert runtimes.phrase(seconds) == text


@pytest.mark.parametrize(("mb", "text"), [(12, "50 MB"), (437, "450 MB"), (612, "600 MB"), (1536, "1.5 GB")])
def test_peak_memory_is_rounded_for_learners(mb, text):
    assert runtimes.memory_mb(mb) == text


def test_the_header_gains_and_then_updates_its_peak_memory():
    first = "# 14 · x\n\n**Runs in:** about 15 s on 2 CPU cores (about 30 s under `spawn`). No GPU needed."
    once = runtimes.header(first, 21.0, 437, lab=False)
    assert once == (
        "# 14 · x\n\n**Runs in:** about 20 s on 2 CPU cores · **Peak memory:** about 450 MB "
        "(about 30 s under `spawn`). No GPU needed."
    )
    assert runtimes.header(once, 12.0, 1536, lab=False).count("Peak memory") == 1
    again = runtimes.header(once, 12.0, 1536, lab=False)
    assert "about 10 s on 2 CPU cores · **Peak memory:** about 1.5 GB (" in again
    assert runtimes.header(once, 12.0, None, lab=False) == once.replace("about 20 s", "about 10 s")
    lab = "**Time:** about 10 min · the solved lab runs in about 5 s on 2 CPU cores.\nDrills notebook 01."
    assert runtimes.header(lab, 3.0, 300, lab=True) == (
        "**Time:** about 10 min · the solved lab runs in about 5 s on 2 CPU cores · peak memory about 300 MB."
        "\nDrills notebook 01."
    )


def test_recording_writes_the_files_the_header_and_both_tables(tmp_path, monkeypatch):
    docs, nbs = tmp_path / "docs", tmp_path / "notebooks"
    docs.mkdir()
    nbs.mkdir()
    monkeypatch.setattr(runtimes, "ROOT", tmp_path)
    for name, path in (
        ("RUNTIMES", docs / "runtimes.json"),
        ("PEAK_MEMORY", docs / "peak_memory.json"),
        ("README", tmp_path / "README.md"),
        ("INSTRUCTOR", docs / "instructor.md"),
    ):
        monkeypatch.setattr(runtimes, name, path)
    runtimes.README.write_text("| 14 | [x](notebooks/14_x.ipynb) | learn | ~5 s | — | — |\n")
    runtimes.INSTRUCTOR.write_text("| 14 | [x](../notebooks/14_x.ipynb) | ~5 s | ~30 s | — | — |\n")
    first = nbformat.v4.new_markdown_cell("**Runs in:** about 5 s on 2 CPU cores.")
    nb = nbformat.v4.new_notebook(cells=[first])
    nbformat.write(nb, nbs / "14_x.ipynb")
    runtimes.record(nbs / "14_x.ipynb", 14.2, 612.4)
    assert runtimes.load() == {"notebooks/14_x.ipynb": 14.2}
    assert runtimes.load_peaks() == {"notebooks/14_x.ipynb": 612}
    assert runtimes.header_phrase(nbs / "14_x.ipynb") == "about 15 s"
    assert runtimes.header_memory(nbs / "14_x.ipynb") == "600 MB"
    assert runtimes.README.read_text() == "| 14 | [x](notebooks/14_x.ipynb) | learn | ~15 s | ~600 MB | — |\n"
    assert runtimes.instructor_times() == {"14": "~15 s"}
