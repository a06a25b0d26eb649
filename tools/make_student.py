"""Zip the course for students (`make student`): build/loaderlab-student.zip, one folder
``loaderlab-course/`` with the notebooks and their lesson modules, the labs, the package, README,
Makefile, requirements and setup files, JupyterLab's settings and the docs, but no answers.

The bundle stands alone: its README is docs/student/README.md with the course map and the
troubleshooting list copied from README.md (no solutions, instructor or answer links, only
learner commands); its Makefile keeps the learner targets only (setup, lab, preflight,
wheelhouse, clean), and tools/course.py there offers only those (it sees no tests/); a link in
a document or notebook to a file the bundle leaves out becomes its plain text.

Left out: solutions/ and docs/answers.md (the answers), docs/instructor.md (the instructor's
guide), tests/ and conftest.py (they run the solutions), the tools that need solutions/
(make_labs, soak, build_site with mkdocs.yml), the grader, this script and .ci/. The files are
those git tracks (commit a new notebook first), as they are in the working tree. The zip is refused
(exit 1, one sentence) when a lab or notebook in it mentions solutions/ or imports a lesson
module the bundle lacks. Usage: python tools/make_student.py [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = "loaderlab-course"
LEFT_OUT = (
    "solutions/",
    "tests/",
    ".ci/",
    ".github/",
    "build/",
    "site/",
    "wheelhouse/",
    "conftest.py",
    "mkdocs.yml",
    "docs/answers.md",
    "docs/instructor.md",
    "docs/student/",
    "tools/grade.py",
    "tools/grade_kernel.py",
    "tools/grade_lab.py",
    "tools/grade_report.py",
    "tools/make_labs.py",
    "tools/make_student.py",
    "tools/soak.py",
    "tools/build_site.py",
    "tools/site_hooks.py",
    "tools/machines.py",
    "tools/simulation/",
    "tools/record.py",
    "CONTRIBUTING.md",
    "requirements-dev.txt",
    ".pre-commit-config.yaml",
)
LEARNER_TARGETS = ("setup", "lab", "preflight", "wheelhouse", "clean")
LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
NOT_FILES = re.compile(
    r"(^|/)(\.git|\.venv|__pycache__|\.ipynb_checkpoints|\.pytest_cache|\.ruff_cache|"
    r"\.cache|[^/]*\.egg-info)(/|$)|^labs/lab[^/]*\.py$"
)
LESSON_IMPORT = re.compile(r"(?:from|import) (lesson\w+)")


def course_files() -> list[str]:
    """Return the course's files (relative, POSIX) that go to students."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, text=True
        ).stdout.split("\0")
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file but the usual junk
        listed = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file()]
    return sorted(name for name in set(listed) if name and keep(name) and (ROOT / name).is_file())


def keep(name: str) -> bool:
    """Return whether the course file ``name`` (relative, POSIX) goes to students."""
    return not NOT_FILES.search(name) and not any(name == x or name.startswith(x) for x in LEFT_OUT)


def problems(files: list[str]) -> list[str]:
    """Return what makes the bundle unusable or leaky: one sentence each."""
    found = []
    names = set(files)
    for name in files:
        if not name.endswith(".ipynb") or not name.startswith(("labs/", "notebooks/")):
            continue
        text = (ROOT / name).read_text(encoding="utf-8")
        if "solutions/" in text:
            found.append(f"{name} mentions solutions/, which students do not get")
        for module in sorted(set(LESSON_IMPORT.findall(text))):
            if f"notebooks/{module}.py" not in names and f"%%writefile {module}.py" not in text:
                found.append(f"{name} imports {module}, but notebooks/{module}.py is not in the bundle")
    if not any(n.startswith("labs/") for n in files) or "loaderlab/__init__.py" not in names:
        found.append("the bundle lacks labs/ or the loaderlab package")
    return found


def section(text: str, title: str) -> str:
    """The body of the ``## title`` section of a Markdown text (up to the next ``## ``)."""
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    return found.group(1).strip() if found else ""


def student_readme() -> str:
    """docs/student/README.md with README.md's course map and troubleshooting list filled in."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    template = (ROOT / "docs" / "student" / "README.md").read_text(encoding="utf-8")
    rows = section(readme, "Course map").splitlines()
    course_map = "\n".join(line for line in rows if line.startswith("|"))
    return template.replace("{course_map}", course_map).replace(
        "{troubleshooting}", section(readme, "Troubleshooting")
    )


STUDENT_MAKEFILE = """\
# loaderlab (student copy): `make lab` to learn. Every target runs tools/course.py, which does the
# same on Windows without make: `py tools/course.py lab`. `python3 tools/course.py --help` lists them.
# Variables: PYTHON (the Python that creates .venv; 3.11-3.13), OFFLINE=1 (install from wheelhouse/
# only), TORCH_INDEX=URL or default (where torch comes from, see docs/install.md).
PYTHON ?= python3
COURSE = $(PYTHON) tools/course.py
OFFLINE_FLAG = $(if $(filter 1,$(OFFLINE)),--offline)

.PHONY: setup lab preflight wheelhouse clean

# .venv with what the notebooks and labs import, the kernel and JupyterLab's classroom settings
setup:
\t$(COURSE) setup $(OFFLINE_FLAG)

lab:
\t$(COURSE) lab $(OFFLINE_FLAG)

# Is this machine ready? Before setup: the standard library checks; after it, the deep ones.
preflight:
\t$(COURSE) preflight

wheelhouse:
\t$(COURSE) wheelhouse

clean:
\t$(COURSE) clean
"""


def student_makefile() -> str:
    """The Makefile of the bundle: the learner targets only (``LEARNER_TARGETS``)."""
    return STUDENT_MAKEFILE


def unlink_left_out(name: str, text: str) -> str:
    """``text`` of the file ``name`` with every link to a file the bundle leaves out turned into
    its plain text (``[the answers](../docs/answers.md)`` → ``the answers``)."""

    def plain(match: re.Match) -> str:
        target = match.group(2).split("#")[0]
        if not target or "://" in target or target.startswith("mailto:"):
            return match.group(0)
        resolved = (Path(name).parent / target).as_posix()
        parts: list[str] = []
        for part in resolved.split("/"):
            if part == "..":
                if parts:
                    parts.pop()
            elif part not in ("", "."):
                parts.append(part)
        return match.group(0) if keep("/".join(parts)) else match.group(1)

    return LINK.sub(plain, text)


def bundled(name: str) -> bytes:
    """The bytes of course file ``name`` as the bundle holds it."""
    if name == "README.md":
        return student_readme().encode()
    if name == "Makefile":
        return student_makefile().encode()
    data = (ROOT / name).read_bytes()
    if name.endswith(".md"):
        return unlink_left_out(name, data.decode("utf-8")).encode()
    if name.endswith(".ipynb"):
        nb = json.loads(data)
        for cell in nb.get("cells", []):
            if cell.get("cell_type") == "markdown":
                source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                new = unlink_left_out(name, source)
                if new != source:
                    cell["source"] = new.splitlines(keepends=True)
        return (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode()
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/make_student.py",
        description="Zip the course for students: build/loaderlab-student.zip, without the answers.",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "build" / "loaderlab-student.zip",
        help="where to write the zip (default: build/loaderlab-student.zip)",
    )
    out = parser.parse_args(argv).out
    files = course_files()
    wrong = problems(files)
    if wrong:
        more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
        print(f"make student: not written: {wrong[0]}" + more)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name in files:
            bundle.writestr(f"{FOLDER}/{name}", bundled(name))
    print(
        f"{out}: {len(files)} files, {out.stat().st_size / 1e6:.1f} MB, in {FOLDER}/ "
        "(no solutions/, docs/answers.md, tests/); unzip, then `make lab`"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
