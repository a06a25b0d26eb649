"""Every command the documents tell a user to type is checked here (#27).

COMMANDS lists each command found in the code blocks and inline code of README.md,
CONTRIBUTING.md and docs/*.md, with how it is checked. The first test collects the commands
from the documents and fails when one is missing from the list (a new command cannot be added
untested) or listed but no longer documented. Each command is then, as its entry says:

- RUN: run exactly as written, in a shell at the repository root (or in a prepared folder),
  with a time bound; it must exit as expected and print no traceback. `python` means the
  course's environment is active (.venv's bin first on PATH), as the documents say.
- DRY: a command that installs, downloads, starts a server until you stop it, deletes .venv or
  runs a test tier that takes minutes (running it inside a test would repeat the suite or
  leave a server): `make -n` shows the course.py line it runs, and that line runs with
  `--dry-run`, which builds every argument and prints the commands without running them.
  `py tools/course.py ...` (Windows' launcher) runs here as `python3 tools/course.py ... --dry-run`.
- VARIANT: run a stated read-only variant (a writer's `--check`, a synopsis's `--help`).
- ELSEWHERE: needs what this machine does not have (conda, Windows, Colab); the files it names
  are checked to exist.
- WORD: not a command, a word of prose set in code (`make`, `python -O`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from course_code import ROOT  # noqa: E402

DOCUMENTS = ["README.md", "CONTRIBUTING.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]
FIRST_WORDS = (
    "make",
    "python",
    "python3",
    "py",
    ".venv/bin/python",
    "conda",
    "pip",
    "!pip",
    "jupyter",
    "git",
    "wsl",
    "set",
    "bash",
    "docker",
    "source",
    "sudo",
    "apt",
    "curl",
    "winget",
    "Set-ExecutionPolicy",
    ".venv\\Scripts\\python.exe",
    ".venv\\Scripts\\activate",
)
VARIABLE = re.compile(r"^[A-Z][A-Z0-9_]*=")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
SHELLS = ("", "bash", "sh", "shell", "console")

MY_MODULE = """from torch.utils.data import DataLoader, TensorDataset
import torch


def make_loader():
    return DataLoader(TensorDataset(torch.arange(64.0)), batch_size=8)
"""


def RUN(
    timeout: int = 120, codes: tuple[int, ...] = (0,), says: str = "", module: str = "", active: bool = True
) -> tuple:
    """Run as written; ``module``: run in a fresh folder holding ``module``.py (MY_MODULE);
    ``active=False``: in the shell of a user who has not installed yet (no .venv on PATH)."""
    return ("run", timeout, codes, says, module, active)


def DRY(why: str) -> tuple:
    return ("dry", why)


def VARIANT(command: str, why: str, timeout: int = 120) -> tuple:
    return ("variant", command, why, timeout)


def ELSEWHERE(why: str, *files: str) -> tuple:
    return ("elsewhere", why, files)


def WORD(why: str = "a word in prose") -> tuple:
    return ("word", why)


SERVER = "starts JupyterLab until you stop it; make preflight (run below) starts the same server and stops it"
INSTALLS = "installs into .venv (pip); tests/test_install.py and tests/test_course.py check its steps"
SUITE = "a test tier of minutes: running it here would run the suite inside itself"
COMMANDS: dict[str, tuple] = {
    # the two commands, setup and the course's entry point
    "make lab": DRY(SERVER),
    "make test": DRY(SUITE),
    "make setup": DRY(INSTALLS),
    "make lab OFFLINE=1": DRY(SERVER + "; and it needs a wheelhouse/"),
    "make preflight": RUN(timeout=240),
    # documented as the check before installing: the shell has no course environment yet
    "python3 tools/preflight.py": RUN(timeout=60, says="ready to install", active=False),
    "python tools/preflight.py": RUN(timeout=240),
    'python tools/course.py preflight --report preflight.json --name "Your Name"': VARIANT(
        'd=$(mktemp -d) && python tools/course.py preflight --skip lab,loader --report "$d/preflight.json" '
        '--name "Your Name" && grep -q \'"student": "Your Name"\' "$d/preflight.json"',
        "the same report written to a temporary folder, without the two slow checks make preflight runs",
        timeout=180,
    ),
    'py tools/course.py preflight --report preflight.json --name "Your Name"': DRY(
        "Windows' launcher; the python form runs above"
    ),
    "python3 tools/preflight.py --summarise reports/": VARIANT(
        'd=$(mktemp -d) && mkdir "$d/reports" && python3 tools/preflight.py --skip lab,loader --report '
        '"$d/reports/a.json" --name A && cd "$d" && '
        'python3 "$OLDPWD/tools/preflight.py" --summarise reports/ | grep -q "1 of 1 ready"',
        "a folder of one report written first",
        timeout=180,
    ),
    "python3 tools/course.py --help": RUN(timeout=30, says="commands:"),
    "python3 tools/course.py lab": DRY(SERVER),
    "py tools/course.py lab": DRY(SERVER),
    "py tools/course.py lab --offline": DRY(SERVER),
    "py tools/course.py preflight": DRY("Windows' launcher; python3 tools/preflight.py runs above"),
    "py tools/course.py test": DRY(SUITE),
    "py tools/course.py setup": DRY(INSTALLS),
    "py -3.11 tools/course.py setup": DRY(INSTALLS + "; -3.11 picks the Python of Windows' launcher"),
    "py tools/course.py": WORD("the entry point named in prose"),
    "PYTHON=python3.12 make setup": DRY(
        INSTALLS + " with another Python (measured by hand: docs/install.md)"
    ),
    "TORCH_INDEX=default make setup": DRY("downloads torch's CUDA build, 2.74 GB"),
    "LOADERLAB_START_METHOD=spawn make lab": DRY(SERVER),
    "make wheelhouse": DRY("downloads every wheel a student needs, about 295 MB"),
    "make clean": DRY("deletes .venv, which this test runs in"),
    "make student": RUN(timeout=120, says="loaderlab-student.zip"),
    # the maintainers' targets
    "make check": DRY(SUITE),
    "make check LOAD=1": DRY(SUITE + " with one core kept busy"),
    "make lint": RUN(timeout=180),
    "make test-spawn": DRY(SUITE),
    "make test-machines": DRY(SUITE),
    "make unit": DRY(SUITE),
    "make notebooks": DRY(SUITE),
    "make execute": DRY("re-executes and rewrites every notebook"),
    "make execute NB=notebooks/03_…ipynb": DRY("re-executes and rewrites a notebook (… stands for its name)"),
    "make record": DRY("waits for a quiet machine and records every notebook (tests/test_record.py)"),
    "make record NB=notebooks/03_…ipynb": DRY("records a notebook (… stands for its name)"),
    "make labs": DRY("rewrites labs/ (make labs CHECK=1 runs below)"),
    "make labs CHECK=1": RUN(timeout=120),
    "make claims": VARIANT("python tools/claims.py --check", "it rewrites docs/claims.md; --check compares"),
    "python tools/links.py": RUN(timeout=120),
    "make wheelhouse PLATFORMS=all PYTHONS=3.11,3.12,3.13": DRY(
        "downloads about 1.2 GB; tests/test_wheelhouse.py checks its options and (release) resolves "
        "a filled one"
    ),
    "make html": DRY("builds the site with mkdocs; tests/test_site.py builds it"),
    "make soak N=3 LOAD=1": DRY(SUITE + " three times"),
    ".venv/bin/python -m pytest tests/test_cores.py": RUN(timeout=120),
    "python -m pytest": VARIANT(
        "python -m pytest --collect-only -q -p no:cacheprovider",
        "the check tier (make check runs it): collecting shows what it selects",
        timeout=180,
    ),
    "python -m tools.soak --help": RUN(timeout=60, says="usage"),
    # the doctor, the grader, the cheat sheet
    "python -m loaderlab doctor my_module:make_loader": RUN(timeout=180, module="my_module"),
    "python -m loaderlab doctor module:make_loader": RUN(timeout=180, module="module"),
    "python tools/grade.py submissions/ --csv grades.csv --timeout 180": RUN(
        timeout=60, codes=(0, 2), says="submissions"
    ),
    "python tools/grade.py SUBMISSIONS... --csv PATH [--timeout S] [--lab NN] [--feedback DIR]": VARIANT(
        "python tools/grade.py --help", "a synopsis: its --help must answer"
    ),
    "py tools/grade.py submissions/ --csv grades.csv": ELSEWHERE(
        "Windows' launcher; tests/test_grade.py runs `python tools/grade.py` with a Python that is not "
        "the course's, which relaunches itself with .venv's"
    ),
    "python tools/make_cheatsheet.py": VARIANT(
        "python tools/make_cheatsheet.py --check", "it rewrites docs/cheatsheet.md; --check compares"
    ),
    # elsewhere: conda, Colab, Windows
    "conda env create -f environment.yml": ELSEWHERE("no conda here", "environment.yml", "requirements.txt"),
    "conda activate loaderlab": ELSEWHERE("no conda here", "environment.yml"),
    'python -m ipykernel install --user --name loaderlab --display-name "Python (loaderlab)"': ELSEWHERE(
        "the conda route: it writes a kernel into your home folder (make setup registers it in .venv)"
    ),
    "jupyter lab": ELSEWHERE("the conda route's server (make lab's runs in make preflight)"),
    "pip install -q -r requirements.txt -e .": VARIANT(
        "python -m pip install -q --dry-run -r requirements.txt -e .",
        "what Colab's first cell runs (tools/colab.py; tests/test_colab.py runs the cell): pip resolves it",
    ),
    "set TORCH_INDEX=default": ELSEWHERE("Windows' cmd.exe"),
    "source .venv/bin/activate": ELSEWHERE("changes the shell it runs in: the RUN commands use .venv's PATH"),
    "wsl --install": ELSEWHERE("Windows"),
    # Windows without admin rights
    "winget install --id Python.Python.3.11 --scope user": ELSEWHERE("Windows: a per-user Python"),
    ".venv\\Scripts\\python.exe tools/preflight.py": VARIANT(
        ".venv/bin/python tools/preflight.py --skip lab,loader",
        "Windows' path of .venv's Python (tools/course.py venv_python); this is Linux's (the server and "
        "the epoch: `python tools/preflight.py` above)",
        timeout=120,
    ),
    ".venv\\Scripts\\activate": ELSEWHERE("Windows: the script the policy blocks"),
    "Set-ExecutionPolicy -Scope CurrentUser RemoteSigned": ELSEWHERE("Windows' PowerShell"),
    "docker run --cpus=2": ELSEWHERE("no docker here: the container limit the doctor's core count reads"),
    "docker run --shm-size=2g": ELSEWHERE("no docker here: the flag to add to your own docker run"),
    "pip download": WORD(),
    "python -O": WORD(),
    "python3": WORD(),
    "python": WORD("the Microsoft Store's Python has `python`, not `py`"),
    "py": WORD("Windows' launcher, named in prose"),
    ".venv\\Scripts\\python.exe": WORD("the environment's Python on Windows, named in prose"),
    "make": WORD(),
}


def documented() -> dict[str, str]:
    """Every command in the documents: the command -> the first document that has it."""
    found: dict[str, str] = {}
    for name in DOCUMENTS:
        text = (ROOT / name).read_text(encoding="utf-8")
        lines = []
        for language, body in FENCE.findall(text):
            if language in SHELLS:
                lines += [
                    line.split(" #", 1)[0].strip()
                    for line in body.splitlines()
                    if line.strip() and not line.strip().startswith("#")
                ]
        for span in INLINE.findall(FENCE.sub("", text)):
            words = span.split()
            if words and (words[0] in FIRST_WORDS or VARIABLE.match(words[0]) and len(words) > 1):
                lines.append(span.strip())
        for line in lines:
            found.setdefault(line, name)
    return found


def test_every_documented_command_is_listed_here():
    found = documented()
    new = [f"{command!r} ({where})" for command, where in found.items() if command not in COMMANDS]
    assert not new, "documented commands this test does not check: add each to COMMANDS\n" + "\n".join(new)
    gone = [command for command in COMMANDS if command not in found]
    assert not gone, f"listed here but no longer documented: remove from COMMANDS: {gone}"


def _environment(active: bool = True) -> dict[str, str]:
    """The shell of a user whose course environment is active (.venv's bin first on PATH), or
    (``active=False``) of one who has not installed yet: no virtual environment on PATH."""
    bin_dir = (ROOT / ".venv" / "bin").as_posix()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOADERLAB_", "PYTEST_", "VIRTUAL_ENV"))}
    paths = [p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p).parent != ROOT / ".venv"]
    env["PATH"] = os.pathsep.join([bin_dir, *paths] if active else paths)
    if active:
        env["VIRTUAL_ENV"] = str(ROOT / ".venv")
    return env


def _shell(command: str, timeout: int, cwd: Path = ROOT, active: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=_environment(active),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _no_traceback(done: subprocess.CompletedProcess, command: str) -> None:
    assert "Traceback (most recent call last)" not in done.stdout + done.stderr, (
        f"{command} printed a traceback:\n{(done.stdout + done.stderr)[-3000:]}"
    )


def _dry(command: str) -> None:
    """`make -n` for make commands, then each course.py line it shows with --dry-run."""
    words = shlex.split(command)
    variables = [
        w
        for w in words
        if VARIABLE.match(w)
        and words.index(w) < 1 + words.index(next(w2 for w2 in words if not VARIABLE.match(w2)))
    ]
    rest = words[len(variables) :]
    prefix = " ".join(shlex.quote(v) for v in variables)
    if rest[0] == "make":
        shown = _shell(f"{prefix} make -n {shlex.join(rest[1:])}", 30)
        assert shown.returncode == 0, shown.stderr
        lines = [line for line in shown.stdout.splitlines() if " tools/course.py " in line]
        assert lines, f"make -n {rest[1:]} runs no tools/course.py line: {shown.stdout}"
    else:  # py [-3.11] tools/course.py ... or python3 tools/course.py ...
        at = rest.index("tools/course.py")
        lines = [shlex.join(["python3", *rest[at:]])]
    for line in lines:
        argv = shlex.split(line)
        argv[0] = sys.executable  # the argument construction is what is checked, with this Python
        done = _shell(f"{prefix} {shlex.join(argv)} --dry-run", 60)
        _no_traceback(done, line)
        assert done.returncode == 0, f"{line} --dry-run: {done.stdout}{done.stderr}"
        assert done.stdout.strip(), f"{line} --dry-run printed nothing"


@pytest.mark.course  # runs each command as a subprocess: about 2 minutes in all
@pytest.mark.parametrize("command", list(COMMANDS))
def test_documented_command(command, tmp_path):
    kind, *details = COMMANDS[command]
    if kind == "word":
        assert len(command.split()) <= 2, f"{command!r} looks like a whole command, not a word"
        return
    if kind == "elsewhere":
        why, files = details
        missing = [f for f in files if not (ROOT / f).is_file()]
        assert not missing, f"{command} names files that do not exist: {missing}"
        if command.startswith("conda ") and shutil.which("conda"):
            pytest.skip(f"conda is installed here, but creating an environment downloads it all ({why})")
        return
    if kind == "dry":
        _dry(command)
        return
    if kind == "variant":
        variant, _why, timeout = details
        done = _shell(variant, timeout)
        _no_traceback(done, variant)
        assert done.returncode == 0, f"{variant}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        return
    timeout, codes, says, module, active = details
    cwd = ROOT
    if module:
        (tmp_path / f"{module}.py").write_text(MY_MODULE)
        cwd = tmp_path
    done = _shell(command, timeout, cwd, active)
    _no_traceback(done, command)
    assert done.returncode in codes, (
        f"{command} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
    )
    assert says in done.stdout + done.stderr, f"{command} did not say {says!r}:\n{done.stdout[-2000:]}"
