"""What the grader hands back (tools/grade.py runs the submissions): each submission's result, the
CSV, a feedback file per submission a student reads without the course's tools, and the per-lab
summary with the most common failures. Standard library only.

The CSV has the columns ``student,submission,lab,points,max_points,passed,reason,part1,part2``:
the student is the submission's first folder under a folder argument (Moodle's folder name
cleaned), else the name in a Canvas or Blackboard file name, else the file name; ``POINTS``
per lab, each check an equal share (the parts: labs with two checks, 05 and 10; empty for the
others). Each submission gets a feedback file (``feedback/<student>_lab<NN>.txt`` beside the CSV,
or ``--feedback DIR``: each check's sentence and hint), and ``<csv>_summary.txt`` holds the
per-lab table and the most common failures.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

PASS, FAIL = "✅", "❌"  # as loaderlab.checks.report prints them
POINTS = 10  # per lab; a lab with two checks gives each half
HEADER = ["student", "submission", "lab", "points", "max_points", "passed", "reason", "part1", "part2"]


# Learning-platform exports: Canvas names files `doejane_12345_67890_lab.ipynb` (LATE_ may follow
# the name), Blackboard `Lab 01_jdoe_attempt_2026-12-01-10-00-00_lab.ipynb`, Moodle puts each
# student in a folder `Jane Doe_12345_assignsubmission_file_`.
CANVAS = re.compile(r"^([A-Za-z][\w-]*?)_(?:LATE_)?\d+_\d+_")
BLACKBOARD = re.compile(r"_([^_]+)_attempt_\d{4}-\d\d-\d\d")
MOODLE = re.compile(r"^(.+?)_\d+_assignsubmission_\w*$")


@dataclass
class Result:
    submission: str
    lab: str
    passed: bool
    reason: str
    parts: list[bool] = field(default_factory=list)  # one per check, for labs with two
    student: str = ""
    checks: list[tuple[str, bool, str]] = field(default_factory=list)  # (check, passed, its sentence)

    @property
    def points(self) -> float:
        """Points out of POINTS (each of the lab's checks an equal share; none without a check)."""
        if not self.checks:
            return float(POINTS if self.passed else 0)
        return round(POINTS * sum(ok for _, ok, _ in self.checks) / len(self.checks), 1)


def write_csv(results: list[Result], path: Path) -> None:
    """Write one row per result under HEADER (the parts empty for a lab with one check)."""
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(HEADER)
        for r in results:
            parts = [int(p) for p in r.parts[:2]] + [""] * (2 - len(r.parts[:2]))
            writer.writerow(
                [r.student, r.submission, r.lab, f"{r.points:g}", POINTS, int(r.passed), r.reason, *parts]
            )


def student_of(path: Path, root: Path | None = None) -> str:
    """The student a submission belongs to: its first folder under ``root`` (an export with one
    folder per student, Moodle's name cleaned), else the name in a Canvas or Blackboard file name,
    else the file name without ``.ipynb``."""
    if root is not None:
        inside = path.resolve().relative_to(root.resolve()).parts
        if len(inside) > 1:
            folder = inside[0]
            moodle = MOODLE.match(folder)
            return moodle.group(1) if moodle else folder
    for pattern in (CANVAS, BLACKBOARD):
        if found := pattern.search(path.name):
            return found.group(1)
    return path.stem


def feedback(result: Result) -> str:
    """The text a student reads: lab, points, each check's sentence and hint, or why nothing ran."""
    mark = PASS if result.passed else FAIL
    lines = [
        f"loaderlab lab {result.lab or '?'}: {result.points:g} of {POINTS} points {mark}",
        f"submission: {Path(result.submission).name}",
        "",
    ]
    for name, ok, sentence in result.checks:
        lines.append(f"{PASS if ok else FAIL} {name}: {sentence}")
    if result.reason and not any(result.reason.endswith(s) for _, ok, s in result.checks if not ok):
        lines += ["", f"Why: {result.reason}"]
    if not result.passed:
        lines += [
            "",
            "Fix what the first ❌ line says (its hint names the notebook section), run the "
            "lab's check cell again until it prints ✅, then hand the notebook in again.",
        ]
    return "\n".join(lines) + "\n"


def write_feedback(results: list[Result], folder: Path) -> list[Path]:
    """Write one feedback file per submission into ``folder`` (``<student>_lab<NN>.txt``; two
    files of one student for one lab get ``_2``, ``_3``); return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for result in results:
        base = re.sub(r"[^\w.-]+", "_", f"{result.student or 'unknown'}_lab{result.lab or 'XX'}").strip("_")
        target, n = folder / f"{base}.txt", 1
        while target in written:
            n += 1
            target = folder / f"{base}_{n}.txt"
        target.write_text(feedback(result), encoding="utf-8")
        written.append(target)
    return written


def common_reason(reason: str) -> str:
    """A failure reason with its cell numbers and figures taken out, so that alike reasons count
    together."""
    return re.sub(r"\d+(\.\d+)?", "N", reason.split(" Hint:")[0])[:140]


def summary(results: list[Result]) -> str:
    """Return the per-lab table (submissions, passed, failed, mean points) and, per lab, its most
    common failure reasons."""
    groups = {lab or "?": [r for r in results if r.lab == lab] for lab in sorted({r.lab for r in results})}
    rows = [("lab", "submissions", "passed", "failed", "mean points")]
    for lab, mine in [*groups.items(), ("all", results)]:
        passed = sum(r.passed for r in mine)
        mean = sum(r.points for r in mine) / len(mine) if mine else 0.0
        rows.append((lab, str(len(mine)), str(passed), str(len(mine) - passed), f"{mean:.1f}"))
    text = [f"{a:<5} {b:>11} {c:>7} {d:>7} {e:>12}" for a, b, c, d, e in rows]
    for lab, mine in groups.items():
        reasons = Counter(common_reason(r.reason) for r in mine if not r.passed)
        if reasons:
            text.append(f"lab {lab}, most common failures:")
            text += [f"  {count} × {reason}" for reason, count in reasons.most_common(3)]
    return "\n".join(text)
