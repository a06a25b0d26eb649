"""POSIX-only calls are guarded, so a section explains and skips on Windows instead of raising
AttributeError (#27). Static: every use in loaderlab/ and notebooks/lesson*.py of a name Windows
lacks (``signal.SIGUSR1``, ``os.killpg``, ``os.fork``, ``resource``, ``fcntl``, ...), of a
``"fork"`` start method, or of ``/dev/shm`` as a path must be

- under a test that asks the platform (an ``if``/``elif``/``while``/conditional expression, an
  ``and``/``or`` operand after it, or an earlier ``if ...: return``/``raise`` in the same block)
  that names one of GUARD_WORDS (``hasattr(``, ``sys.platform``, ``can_fork``, ...);
- or inside ``try`` / ``contextlib.suppress`` catching the error Windows raises
  (AttributeError, ImportError, OSError, ValueError, NotImplementedError);
- or in a function whose docstring says "POSIX only", and then every call of that function in
  loaderlab/, notebooks/ (lesson modules and notebook cells), labs/ and solutions/ must be
  guarded in the same way.

The scanner is checked on small sources that are, and are not, guarded (it must fail on each
unguarded form), and its list of names against mypy's Windows pass (``--platform win32``: the
names typeshed says Windows lacks, which found ``faulthandler.register`` missing from the list).
Behaviour on Windows is checked by unit tests that patch ``sys.platform`` and remove the
attributes (tests/test_bounded.py, tests/test_failures.py).
"""

from __future__ import annotations

import ast
import json
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from course_code import ROOT  # noqa: E402

POSIX_ATTRIBUTES = {
    "faulthandler": {"register", "unregister"},
    "signal": {
        "SIGUSR1",
        "SIGUSR2",
        "SIGKILL",
        "SIGALRM",
        "SIGHUP",
        "SIGQUIT",
        "SIGSTOP",
        "SIGCONT",
        "setitimer",
        "ITIMER_REAL",
        "pthread_kill",
        "alarm",
    },
    "os": {
        "fork",
        "forkpty",
        "killpg",
        "getpgid",
        "setsid",
        "setpgrp",
        "getpgrp",
        "waitid",
        "P_PID",
        "WEXITED",
        "WNOHANG",
        "WNOWAIT",
        "sched_getaffinity",
        "geteuid",
        "getuid",
        "wait4",
    },
}
POSIX_MODULES = {"resource", "fcntl", "termios", "pwd", "grp"}
FORK_CALLS = {"get_context", "set_start_method"}
SHM_NAMES = {"SHM_PATH"}
GUARD_WORDS = (
    "hasattr(",
    "sys.platform",
    "os.name",
    "can_fork",
    "get_all_start_methods",
    "platform.system",
    "/dev/shm",
    "SHM_PATH",
    "POSIX",
)
# what Windows raises for each kind of use; a `try` must catch that (or Exception) to guard it
RAISES = {
    "attribute": {"AttributeError"},
    "import": {"ImportError", "ModuleNotFoundError"},
    "fork": {"ValueError"},
    "shm": {"OSError", "FileNotFoundError"},
}
CHECKING = {"isdir", "exists", "is_dir", "ismount"}  # os.path.isdir("/dev/shm") is the guard itself
POSIX_ONLY = re.compile(r"POSIX only", re.I)


def _source(node: ast.AST, text: str) -> str:
    return ast.get_source_segment(text, node) or ""


def _guarding(test: ast.AST, text: str) -> bool:
    return any(word in _source(test, text) for word in GUARD_WORDS)


def _exits(body: list[ast.stmt]) -> bool:
    """True when the block always leaves (return, raise, ...), also through every branch of a
    final try or if."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Try):
        return _exits(last.body) and all(_exits(h.body) for h in last.handlers)
    if isinstance(last, ast.If):
        return _exits(last.body) and _exits(last.orelse)
    return isinstance(last, (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _catches(handlers: list[ast.ExceptHandler], errors: set[str]) -> bool:
    names = set()
    for handler in handlers:
        if handler.type is None:
            return True
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        names |= {k.id for k in kinds if isinstance(k, ast.Name)}
    return bool(names & (errors | {"Exception", "BaseException"}))


def _suppresses(node: ast.With, errors: set[str]) -> bool:
    for item in node.items:
        call = item.context_expr
        if isinstance(call, ast.Call) and _name(call.func) == "suppress":
            if {a.id for a in call.args if isinstance(a, ast.Name)} & (errors | {"Exception"}):
                return True
    return False


def _name(node: ast.AST) -> str:
    return getattr(node, "attr", getattr(node, "id", ""))


def _posix_uses(tree: ast.AST) -> Iterator[tuple[ast.AST, str, str]]:
    """(node, what, kind: a key of RAISES) for every POSIX-only use in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.attr in POSIX_ATTRIBUTES.get(node.value.id, ()):
                yield node, f"{node.value.id}.{node.attr}", "attribute"
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            for name in names:
                if name.split(".")[0] in POSIX_MODULES:
                    yield node, f"import {name}", "import"
        elif isinstance(node, ast.Call):
            name = _name(node.func)
            fork = [a for a in node.args[:1] if isinstance(a, ast.Constant) and a.value == "fork"]
            if name in FORK_CALLS and fork:
                yield node, f'{name}("fork")', "fork"
            for keyword in node.keywords:
                if (
                    keyword.arg == "multiprocessing_context"
                    and getattr(keyword.value, "value", None) == "fork"
                ):
                    yield node, 'multiprocessing_context="fork"', "fork"
            for arg in node.args if name not in CHECKING else ():
                if (
                    isinstance(arg, ast.Constant)
                    and isinstance(arg.value, str)
                    and arg.value.startswith("/dev/shm")
                ) or (isinstance(arg, ast.Name) and arg.id in SHM_NAMES):
                    yield node, "/dev/shm as a path", "shm"


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _guarded(node: ast.AST, parents: dict[ast.AST, ast.AST], text: str, errors: set[str]) -> bool:
    """True when ``node`` runs only after the platform was asked, or under a catch of ``errors``."""
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and child is not parent.test:
            if _guarding(parent.test, text):
                return True
        if isinstance(parent, ast.BoolOp):
            before = parent.values[: parent.values.index(child)] if child in parent.values else []
            if any(_guarding(value, text) for value in before):
                return True
        if isinstance(parent, ast.Try) and child in parent.body and _catches(parent.handlers, errors):
            return True
        if isinstance(parent, ast.With) and child in parent.body and _suppresses(parent, errors):
            return True
        for field in ("body", "orelse", "finalbody"):  # an earlier `if not <guard>: return`
            block = getattr(parent, field, None)
            if isinstance(block, list) and child in block:
                for earlier in block[: block.index(child)]:
                    if isinstance(earlier, ast.If) and _guarding(earlier.test, text) and _exits(earlier.body):
                        return True
        child, parent = parent, parents.get(parent)
    return False


def _enclosing_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.FunctionDef | None:
    parent = parents.get(node)
    while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
        parent = parents.get(parent)
    return parent


def unguarded(text: str, name: str = "<source>") -> tuple[list[str], set[str]]:
    """Return (``file:line what`` for each unguarded POSIX-only use, the names of the functions
    documented POSIX only that hold one: their call sites must be guarded)."""
    tree = ast.parse(text)
    parents = _parents(tree)
    found, posix_only = [], set()
    module_posix_only = POSIX_ONLY.search(ast.get_docstring(tree) or "")
    for node, what, kind in _posix_uses(tree):
        if _guarded(node, parents, text, RAISES[kind]):
            continue
        if module_posix_only:  # the whole module: its imports must be guarded
            posix_only.add(Path(name).stem)
            continue
        function = _enclosing_function(node, parents)
        while function is not None:
            if POSIX_ONLY.search(ast.get_docstring(function) or ""):
                posix_only.add(function.name)
                break
            function = _enclosing_function(function, parents)
        else:
            found.append(f"{name}:{node.lineno} {what}")
    return found, posix_only


def unguarded_calls(text: str, functions: set[str], name: str = "<source>") -> list[str]:
    """``file:line name`` for each use (a call, or a reference such as ``target=name``) of a
    POSIX-only function, or import of a POSIX-only module, that is not guarded (a use inside
    another POSIX-only function or module is that one's callers' business)."""
    tree = ast.parse(text)
    parents = _parents(tree)
    if POSIX_ONLY.search(ast.get_docstring(tree) or ""):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            )
            used = [m for m in modules if m.split(".")[-1] in functions]
            errors = RAISES["import"]
        elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            used = [_name(node)] if _name(node) in functions else []
            errors = RAISES["attribute"]
        else:
            continue
        function = _enclosing_function(node, parents)
        if used and getattr(function, "name", None) in used:
            continue  # a recursive call
        documented = function is not None and POSIX_ONLY.search(ast.get_docstring(function) or "")
        if used and not documented and not _guarded(node, parents, text, errors | {"ImportError"}):
            found.append(f"{name}:{node.lineno} {used[0]}")
    return found


def _cell_code(source: str) -> str:
    """A notebook cell as Python: IPython magics and shell lines become comments."""
    return "\n".join(
        "#" + line if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()
    )


def _sources(patterns: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    for pattern in patterns:
        for path in sorted(ROOT.glob(pattern)):
            name = path.relative_to(ROOT).as_posix()
            if path.suffix == ".py":
                yield name, path.read_text(encoding="utf-8")
            else:
                cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
                for index, cell in enumerate(cells):
                    if cell["cell_type"] == "code":
                        yield f"{name}[cell {index}]", _cell_code("".join(cell["source"]))


SCANNED = ("loaderlab/**/*.py", "notebooks/lesson*.py")
# Known unguarded uses in files this test's author does not own, each with where it is reached
# from. The list may only shrink: a use not listed fails, and so does a listed one that is gone
# (delete its line). Guard them, or document the function/module "POSIX only" and guard its uses.
KNOWN = {
    "loaderlab/labs/lab15.py import resource": "lab 15's scaffolding (Linux only), forked child",
    "loaderlab/labs/lab15.py os.setpgrp": "lab 15's scaffolding, forked child",
    'loaderlab/labs/lab15.py multiprocessing_context="fork"': "lab 15's scaffolding, forked child",
    'loaderlab/checks/lab06.py multiprocessing_context="fork"': "worker_growth: its caller asks can_fork()",
    "notebooks/lesson15_fd_limit.py import resource": "notebook 15 (Linux sections), run in a child",
    "notebooks/lesson15_fd_limit.py /dev/shm as a path": "notebook 15 (Linux sections), run in a child",
    "notebooks/lesson15_small_shm.py /dev/shm as a path": "notebook 15's small /dev/shm demo, run in a child",
}
CALLERS = (*SCANNED, "notebooks/*.ipynb", "labs/*.ipynb", "labs/*.py", "solutions/*.ipynb", "solutions/*.py")


def test_posix_only_calls_are_guarded():
    found, posix_only = [], set()
    for name, text in _sources(SCANNED):
        uses, functions = unguarded(text, name)
        found += uses
        posix_only |= functions
    for name, text in _sources(CALLERS):
        try:
            found += unguarded_calls(text, posix_only, name)
        except SyntaxError:
            continue  # a cell that is not Python (a %%writefile of another language): nothing to call
    keys = {f"{line.split(':', 1)[0]} {line.split(' ', 1)[1]}": line for line in found}
    new = sorted(line for key, line in keys.items() if key not in KNOWN)
    assert not new, (
        "POSIX-only uses without a guard (they raise on Windows; ask hasattr(...) or "
        "sys.platform first, or document the function 'POSIX only' and guard its uses):\n" + "\n".join(new)
    )
    gone = sorted(set(KNOWN) - set(keys))
    assert not gone, "guarded now: delete these lines from KNOWN in this test:\n" + "\n".join(gone)


GUARDED = {
    "hasattr": """
        import signal
        if hasattr(signal, "SIGUSR1"):
            signal.signal(signal.SIGUSR1, print)
    """,
    "early return": """
        import os, signal
        def stop(pid):
            if not hasattr(os, "killpg"):
                return
            os.killpg(pid, signal.SIGKILL)
    """,
    "conditional expression": """
        import sys
        def context():
            return "fork" if sys.platform != "win32" else "spawn"
        method = get_context("fork") if can_fork() else None
    """,
    "and": """
        import os
        ok = os.path.isdir("/dev/shm") and shutil.disk_usage("/dev/shm").free > 0
    """,
    "try": """
        try:
            import resource
        except ImportError:
            resource = None
    """,
    "suppress": """
        import contextlib, os
        with contextlib.suppress(AttributeError, OSError):
            os.killpg(1, 9)
    """,
    "documented and guarded at its call": """
        import os
        def stop(pid):
            '''Kill pid's process group (POSIX only: its callers ask first).'''
            os.killpg(pid, 9)
        if hasattr(os, "killpg"):
            stop(1)
    """,
}
UNGUARDED = {
    "bare signal": ("import signal\nsignal.signal(signal.SIGUSR1, print)\n", ["signal.SIGUSR1"]),
    "bare killpg": ("import os\nos.killpg(1, 9)\n", ["os.killpg"]),
    "bare import": ("import fcntl\n", ["import fcntl"]),
    "fork context": (
        "loader = DataLoader(ds, multiprocessing_context='fork')\n",
        ['multiprocessing_context="fork"'],
    ),
    "shm path": ("import shutil\nshutil.disk_usage('/dev/shm')\n", ["/dev/shm as a path"]),
    "wrong guard": ("import os\nif DEBUG:\n    os.fork()\n", ["os.fork"]),
    "wrong catch": ("import os\ntry:\n    os.fork()\nexcept KeyError:\n    pass\n", ["os.fork"]),
    "guard after the use": (
        "import os\nos.killpg(1, 9)\nif not hasattr(os, 'killpg'):\n    raise SystemExit\n",
        ["os.killpg"],
    ),
}


@pytest.mark.parametrize("case", GUARDED)
def test_the_scanner_accepts_guarded_forms(case):
    text = textwrap.dedent(GUARDED[case])
    found, functions = unguarded(text)
    assert found == [], found
    assert unguarded_calls(text, functions) == []


@pytest.mark.parametrize("case", UNGUARDED)
def test_the_scanner_finds_unguarded_forms(case):
    text, whats = UNGUARDED[case]
    found, _ = unguarded(text)
    assert [line.split(" ", 1)[1] for line in found] == whats


def test_a_posix_only_function_called_without_a_guard_is_found():
    text = textwrap.dedent(GUARDED["documented and guarded at its call"]) + "stop(2)\n"
    found, functions = unguarded(text)
    assert found == [] and functions == {"stop"}
    assert [line.split(" ", 1)[1] for line in unguarded_calls(text, functions)] == ["stop"]
    assert [line.split(" ", 1)[1] for line in unguarded_calls("Process(target=stop)\n", functions)] == [
        "stop"
    ]


def test_a_module_documented_posix_only_must_be_imported_under_a_guard():
    module = '"""Lesson 99: descriptor limits (POSIX only)."""\nimport resource\n'
    found, names = unguarded(module, "notebooks/lesson99.py")
    assert found == [] and names == {"lesson99"}
    assert unguarded_calls("import sys\nif sys.platform == 'linux':\n    import lesson99\n", names) == []
    assert [line.split(" ", 1)[1] for line in unguarded_calls("from lesson99 import limit\n", names)] == [
        "lesson99"
    ]


def _missing_attributes(platform: str) -> set[tuple[str, int, str]]:
    """(file, line, name) of every "Module has no attribute" error of mypy run for ``platform``
    over the scanned files (typeshed says which names each platform has)."""
    from mypy import api

    files = sorted(str(p.relative_to(ROOT)) for pattern in SCANNED for p in ROOT.glob(pattern))
    # This platform's pass shares lint's cache (same options: a fresh clone's lint has just filled
    # it, 0.5 s instead of 5 s); another platform's gets its own, as mypy keys a cache by platform.
    native = sys.platform.startswith(platform)
    cache = ROOT / ".mypy_cache" / ("" if native else f"posix-guards-{platform}")
    out = api.run(["--platform", platform, "--cache-dir", str(cache), "--no-error-summary", *files])[0]
    found = re.findall(r'^(\S+?):(\d+): error: Module has no attribute "(\w+)"', out, re.M)
    return {(Path(file).as_posix(), int(line), name) for file, line, name in found}


def test_the_scanner_looks_for_every_name_mypy_says_windows_lacks():
    """mypy --platform win32 is the authority on which names Windows lacks: every one the package
    and the lesson modules use (an error there and not on Linux) must be a name the scanner looks
    for, so that test_posix_only_calls_are_guarded checks its guard."""
    windows_only = _missing_attributes("win32") - _missing_attributes("linux")
    assert windows_only, "mypy found no Windows-only name: the scanned files or mypy's output changed"
    unscanned = []
    for file, line, name in sorted(windows_only):
        text = (ROOT / file).read_text(encoding="utf-8").splitlines()[line - 1]
        modules = re.findall(rf"(\w+)\.{name}\b", text)
        if not any(m in POSIX_MODULES or name in POSIX_ATTRIBUTES.get(m, ()) for m in modules):
            unscanned.append(f"{file}:{line} {'/'.join(modules) or '?'}.{name}")
    assert not unscanned, "add these to POSIX_ATTRIBUTES (or the module to POSIX_MODULES):\n" + "\n".join(
        unscanned
    )
