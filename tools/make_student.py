"""Zip the course for students (`make student`): build/loaderlab-student.zip, one folder
``loaderlab-course/`` with the notebooks and their lesson modules, the labs, the package, README,
Makefile, requirements and setup files, JupyterLab's settings and the docs, but no answers.

Left out: solutions/ and docs/answers.md (the answers), docs/instructor.md (the instructor's
guide), tests/ and conftest.py (they run the solutions), the tools that need solutions/
(make_labs, soak, build_site with mkdocs.yml), the grader, this script and .ci/. The files are
those git tracks (commit a new notebook first), as they are in the working tree. The zip is refused
(exit 1, one sentence) when a lab or notebook in it mentions solutions/ or imports a lesson
module the bundle lacks. Usage: python tools/make_student.py [--out PATH]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDER = "loaderlab-course"
LEFT_OUT = ("solutions/", "tests/", ".ci/", "build/", "site/", "wheelhouse/", "conftest.py", "mkdocs.yml",
            "docs/answers.md", "docs/instructor.md", "tools/grade.py", "tools/make_labs.py",
            "tools/make_student.py", "tools/soak.py", "tools/build_site.py")
NOT_FILES = re.compile(r"(^|/)(\.git|\.venv|__pycache__|\.ipynb_checkpoints|\.pytest_cache|\.ruff_cache|"
                       r"\.cache|[^/]*\.egg-info)(/|$)|^labs/lab[^/]*\.py$")
LESSON_IMPORT = re.compile(r"(?:from|import) (lesson\w+)")


def course_files() -> list[str]:
    """Return the course's files (relative, POSIX) that go to students."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"],
                                cwd=ROOT, capture_output=True, check=True, text=True).stdout.split("\0")
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.make_student", description=__doc__.split("\n")[0] if __doc__ else None
    )
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "loaderlab-student.zip",
                        help="the zip to write (default: build/loaderlab-student.zip)")
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
            bundle.write(ROOT / name, f"{FOLDER}/{name}")
    print(f"{out}: {len(files)} files, {out.stat().st_size / 1e6:.1f} MB, in {FOLDER}/ "
          "(no solutions/, docs/answers.md, tests/); unzip, then `make lab`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
