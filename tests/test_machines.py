"""docs/machines.md (written by `make test-machines`, tools/machines.py) stays current: one row per
notebook and solution, one column per profile of the script, each cell a result or "not run"."""

from __future__ import annotations

import re
import subprocess
import sys

from course_code import ROOT

from tools import machines

CELL = re.compile(r"^(✅ \d+ s|❌ .+|not run)$")


def test_every_notebook_and_solution_has_a_row_and_nothing_else_does():
    _, table = machines.read_table(machines.TABLE.read_text())
    every = {p.relative_to(ROOT).as_posix() for p in machines.notebooks([])}
    assert set(table) == every, (
        f"docs/machines.md is stale (missing {sorted(every - set(table))}, "
        f"extra {sorted(set(table) - every)}): run `make test-machines` (or tools/machines.py NOTEBOOK)"
    )


def test_the_columns_are_the_scripts_profiles_and_each_cell_a_result():
    columns, table = machines.read_table(machines.TABLE.read_text())
    names = [column.split(" · ")[0] for column in columns]
    assert set(names) == {p.name for p in machines.PROFILES}, f"docs/machines.md's profiles: {names}"
    for name, cells in table.items():
        for column, cell in cells.items():
            assert CELL.match(cell), f"{name} on {column}: {cell!r}"


def test_a_partial_run_updates_its_rows_and_keeps_the_others():
    col = machines.column(machines.PROFILES[0])
    before = machines.render(
        [col], {"notebooks/00_a.ipynb": {col: "✅ 9 s"}, "notebooks/01_b.ipynb": {col: "❌ x"}}
    )
    after = machines.update(
        {"notebooks/01_b.ipynb": {col: "✅ 12 s"}},
        before,
        ["notebooks/00_a.ipynb", "notebooks/01_b.ipynb", "solutions/01_b.ipynb"],
    )
    columns, table = machines.read_table(after)
    assert columns[: len(machines.PROFILES)] == [machines.column(p) for p in machines.PROFILES]
    assert table["notebooks/00_a.ipynb"][col] == "✅ 9 s"  # kept
    assert table["notebooks/01_b.ipynb"][col] == "✅ 12 s"  # updated
    assert table["solutions/01_b.ipynb"][col] == machines.NOT_RUN  # a new notebook gets its row


def test_a_failure_is_one_table_cell_without_machine_paths():
    text = machines.cell_text("CellExecutionError: File /work/x/y.py | line 3\n  AssertionError " + "x" * 200)
    assert "/work" not in text and "|" not in text and "\n" not in text and len(text) <= 100


def test_a_simulated_profile_shows_its_cpu_count_to_a_new_python():
    probe = "import os, psutil; print(os.cpu_count(), len(os.sched_getaffinity(0)), psutil.cpu_count())"
    for profile in machines.PROFILES:
        if profile.simulated_cpus:
            out = subprocess.run(
                [sys.executable, "-c", probe],
                env=machines.environment(profile),
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            assert out == [str(profile.simulated_cpus)] * 3


def test_a_failed_notebook_is_reported_as_its_cell_and_error_in_one_line():
    from tools import execute_notebooks

    class CellError(Exception):
        ename, evalue, cell_number = "\x1b[31mAssertionError\x1b[39m", "expected\n  one warning", 14

    assert execute_notebooks.failure(CellError()) == "cell 14: AssertionError: expected one warning"
    assert execute_notebooks.failure(TimeoutError("no reply\nin 300 s")) == "TimeoutError: in 300 s"
