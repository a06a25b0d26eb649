"""Every lab checker rejects a nonsense *call* with TypeError/ValueError naming the argument,
shown in Jupyter as one line; a wrong *answer* is still reported as ❌ (tested per checker)."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import loaderlab.checks
from loaderlab.checks.lab06 import check_cow_fix
from loaderlab.checks.lab09 import check_balanced_weights
from loaderlab.checks.lab10 import check_ddp_epochs
from loaderlab.checks.report import CheckerTypeError, CheckerValueError

LAB_MODULES = [
    importlib.import_module(f"loaderlab.checks.{m.name}")
    for m in pkgutil.iter_modules(loaderlab.checks.__path__)
    if m.name.startswith("lab")
]
CHECKERS = [
    obj
    for module in LAB_MODULES
    for name, obj in vars(module).items()
    if name.startswith("check_") and obj.__module__ == module.__name__
]


def test_every_checker_module_is_named_by_its_lab_and_the_package_re_exports_none():
    names = [m.name for m in pkgutil.iter_modules(loaderlab.checks.__path__)]
    assert all(n == "report" or re.fullmatch(r"lab\d\d", n) for n in names), names
    assert not [n for n in vars(loaderlab.checks) if n.startswith("check_")]
    assert len(CHECKERS) >= len(LAB_MODULES)


def _first_parameter(checker) -> str:
    import inspect

    return next(iter(inspect.signature(checker.__wrapped__).parameters))


@pytest.mark.parametrize("checker", CHECKERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize(
    "nonsense", ["my answer", 42, [1, 2], object()], ids=["str", "int", "list", "object"]
)
def test_a_candidate_that_is_not_a_function_raises_a_type_error_naming_it(checker, nonsense, capsys):
    with pytest.raises(TypeError, match=f"`{_first_parameter(checker)}` must be the function") as raised:
        checker(nonsense)
    assert capsys.readouterr().out == ""  # nothing printed, nothing run
    rendered = raised.value._render_traceback_()
    assert len(rendered) == 1 and rendered[0].startswith("❌ " + checker.__name__)


@pytest.mark.parametrize("checker", CHECKERS, ids=lambda c: c.__name__)
def test_unknown_arguments_raise_a_type_error(checker):
    with pytest.raises(CheckerTypeError, match="unexpected keyword argument 'colour'"):
        checker(lambda *a: None, colour="red")


@pytest.mark.parametrize(
    "kwargs, error, word",
    [
        ({"n_rows": 0}, CheckerValueError, "`n_rows` must be > 0"),
        ({"n_rows": -5}, ValueError, "n_rows"),
        ({"n_rows": "100"}, TypeError, "`n_rows` must be an int"),
        ({"n_rows": True}, TypeError, "n_rows"),
    ],
)
def test_check_cow_fix_validates_its_size(kwargs, error, word):
    with pytest.raises(error, match=word):
        check_cow_fix(lambda rows: rows, **kwargs)


def test_check_ddp_epochs_wants_a_function_for_eval_indices():
    with pytest.raises(TypeError, match="`eval_indices` must be a function"):
        check_ddp_epochs(lambda *a: None, [0, 1])


def test_an_unfinished_stub_is_still_pending_not_an_error(capsys):
    def stub(*args):
        raise NotImplementedError("your code here")

    assert check_balanced_weights(stub) is False
    assert check_balanced_weights(None) is False
    assert capsys.readouterr().out.splitlines() == ["⏳ not attempted yet"] * 2


def test_a_wrong_answer_is_a_one_line_verdict_not_an_error(capsys):
    assert check_balanced_weights(lambda labels: "weights") is False
    out = capsys.readouterr().out
    assert out.startswith("❌") and out.count("\n") == 1
