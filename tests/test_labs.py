"""Every lab (generated from its solution) runs top to bottom and only says "not attempted yet".

A lab is its solution with each solution region replaced by ``raise NotImplementedError("your
code here")`` (tools/make_labs.py; test_tools checks that labs/ is up to date). nbval runs every
solution, so a lab runs as far as its solution does provided that (1) no stub runs while a cell
defines things (each one sits in a function's body), (2) no top-level statement calls a stub,
and (3) each stub reaches a checker, which prints "⏳ not attempted yet" for it (the
``checker`` wrapper of loaderlab.checks.report; each checker's tests feed it a stub). These are
checked here without a kernel; running each lab for real is a release check (`make test-spawn`).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import nbformat
import pytest
from course_code import ROOT

LABS = sorted((ROOT / "labs").glob("*.ipynb"))
VERDICTS = ("✅", "❌", "⏳")
MAGIC = re.compile(r"^\s*[%!].*$", re.M)


def _printed_lines(nb) -> list[str]:
    lines = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                lines += out["text"].splitlines()
    return lines


def _code(path: Path) -> list[ast.Module]:
    """Each code cell of a notebook as a module (a %%writefile cell: the module it writes)."""
    trees = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        source = cell.source
        if source.startswith("%%writefile"):
            source = source.split("\n", 1)[1] if "\n" in source else ""
        trees.append(ast.parse(MAGIC.sub("", source)))
    return trees


def _is_stub(node: ast.AST) -> bool:
    exc = getattr(node, "exc", None)
    target = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(node, ast.Raise) and isinstance(target, ast.Name) and target.id == "NotImplementedError"


def _top_level(tree: ast.AST):
    """The nodes a cell runs when it is executed: function and lambda bodies left out."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for decorator in getattr(node, "decorator_list", []):
                yield decorator
                yield from _top_level(decorator)
            continue
        yield node
        yield from _top_level(node)


def _stubs(trees: list[ast.Module]) -> tuple[set[str], set[str]]:
    """(functions and classes whose construction raises the stub, stubbed method names)."""
    callables, methods = set(), set()
    for tree in trees:
        for node in tree.body:
            function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            if function and any(map(_is_stub, ast.walk(node))):
                callables.add(node.name)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and any(map(_is_stub, ast.walk(item))):
                        methods.add(item.name)
                        if item.name in ("__init__", "__new__"):
                            callables.add(node.name)
    return callables, methods


def _checkers(trees: list[ast.Module]) -> dict[str, object]:
    """The ``check_*`` functions a lab imports, by name."""
    found = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("loaderlab"):
                for alias in node.names:
                    if alias.name.startswith("check_"):
                        module = importlib.import_module(node.module)
                        found[alias.asname or alias.name] = getattr(module, alias.name)
    return found


@pytest.mark.skipif(not LABS, reason="no labs yet")
@pytest.mark.parametrize("path", LABS, ids=[p.name for p in LABS])
def test_lab_stubs_run_only_inside_checkers(path):
    from loaderlab.checks.report import checker

    trees = _code(path)
    callables, methods = _stubs(trees)
    assert callables | methods, f"{path.name} has no stub: is it generated from a solution with regions?"
    for tree in trees:
        for node in _top_level(tree):
            assert not _is_stub(node), f"{path.name}: a stub runs when its cell runs (line {node.lineno})"
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else None
                attr = func.attr if isinstance(func, ast.Attribute) else None
                assert name not in callables and attr not in methods, (
                    f"{path.name}: a cell calls the stub {name or attr}() itself: the lab would stop "
                    "with a traceback; pass it to the checker instead"
                )
    checkers = _checkers(trees)
    wrapped = checker(lambda candidate: "").__code__
    calls = [
        node.func.id
        for tree in trees
        for node in _top_level(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in checkers
    ]
    assert calls, f"{path.name}: no checker runs"
    for name in calls:
        assert getattr(checkers[name], "__code__", None) is wrapped, (
            f"{path.name}: {name} is not wrapped by loaderlab.checks.report.checker (⏳ for a stub)"
        )


@pytest.mark.skipif(not LABS, reason="no labs yet")
@pytest.mark.parametrize("path", LABS, ids=[p.name for p in LABS])
def test_a_lab_imports_its_checker_and_scaffolding_one_way_from_its_own_modules(path):
    """Lab NN reaches the package's lab code only by ``from loaderlab.checks.labNN import check_*``
    and ``from loaderlab.labs.labNN import ...`` (solutions' helper files included)."""
    lab = path.name.split("_")[0]
    own = {f"loaderlab.checks.lab{lab}", f"loaderlab.labs.lab{lab}"}
    trees = _code(path) + [ast.parse(p.read_text()) for p in (ROOT / "solutions").glob(f"lab{lab}.py")]
    reached = set()
    for tree in trees:
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                if name.startswith(("loaderlab.checks", "loaderlab.labs")):
                    assert isinstance(node, ast.ImportFrom) and name in own, (
                        f"{path.name} line {node.lineno}: `{name}`; a lab imports only from {sorted(own)}"
                    )
                    reached.add(name)
    assert f"loaderlab.checks.lab{lab}" in reached, f"{path.name} does not import its checker"


@pytest.mark.release  # the static test above stands in for it in make test
@pytest.mark.skipif(not LABS, reason="no labs yet")
@pytest.mark.parametrize("path", LABS, ids=[p.name for p in LABS])
def test_lab_stub_runs_without_traceback_and_reports_not_attempted(path, monkeypatch):
    from tools.execute_notebooks import run

    monkeypatch.setenv("LOADERLAB_TEST_MODE", "1")
    nb, _ = run(path, timeout=120, allow_errors=True)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{path.name} shows a traceback: {errors[0]['ename']}"
    verdicts = [line for line in _printed_lines(nb) if line.startswith(VERDICTS)]
    assert verdicts, f"{path.name}: no checker ran"
    assert all(line.startswith("⏳") for line in verdicts), f"{path.name}: {verdicts}"


def test_every_solution_has_its_lab_and_solution_regions():
    solutions = sorted((ROOT / "solutions").glob("*.ipynb"))
    for solution in solutions:
        assert (ROOT / "labs" / solution.name).exists(), f"labs/{solution.name} missing: run make labs"
        source = "".join(c.source for c in nbformat.read(solution, as_version=4).cells)
        assert source.count("### BEGIN SOLUTION") == source.count("### END SOLUTION") > 0, solution.name
