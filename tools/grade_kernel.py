"""The grader's code that runs inside a submission's kernel (tools/grade.py loads it there).

``capture(key)`` runs once, silently, before the student's first cell. It takes hold of
everything the checks will need to compute, encode, sign and return a verdict — the builtins,
``sys``'s streams and import machinery, the IPython hooks and formatters, ``json.dumps``,
``hmac``, ``hashlib``, ``io.StringIO``, ``contextlib.redirect_stdout``, ``importlib`` — and a
snapshot of every function, class and module that the modules loaded so far expose (torch and
NumPy are imported first, so theirs are in it). It returns one function, ``run(mode, ...)``, and
that function's closure is the only place those references live.

Before each official check the grader calls ``run("restore")`` (silently, so no hook runs),
which puts back the builtins (with dictionary methods only: a student may have replaced ``vars``
or ``dict``), the streams, the import machinery, the hooks, every module in ``sys.modules`` that a
student cell replaced, and every module attribute that was a function, class or module at capture
time and is now a different object (``time.perf_counter = lambda: 0``, ``json.dumps = ...``,
``torch.utils.data.DataLoader = ...``). Then ``run("check", package, module, name, args)`` imports
the checker afresh from ``package``, a copy of the package the grader wrote after the student's
cells ran, calls it, and returns
``json_text + "|" + hmac_sha256(key, json_text)``: the key was given to ``capture`` and is held
only in the closure, so a student function put in the closure's place cannot sign a verdict.

What it cannot stop (documented in docs/instructor.md): code that reaches into these objects on
purpose (a closure's cells, the garbage collector's list of objects), replaces attributes of
classes rather than of modules, or changes objects inside the answer that the checker calls.
Standard library only; it runs in the course's kernel, not in the grader's process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_PREIMPORT = ("torch", "torch.utils.data", "numpy")


def _snapshot(modules: dict[str, Any], kinds: tuple[type, ...]) -> dict[str, tuple[Any, dict[str, Any]]]:
    """For each module: the module and its attributes that are functions, classes or modules."""
    shot = {}
    for name, module in list(modules.items()):
        try:
            attrs = vars(module)
        except TypeError:  # not a module (a placeholder some libraries put in sys.modules)
            continue
        shot[name] = (module, {k: v for k, v in list(attrs.items()) if isinstance(v, kinds)})
    return shot


def capture(key: str) -> Callable[..., Any]:
    """Capture what the checks need before any student code runs; return ``run`` (see the module)."""
    import builtins
    import contextlib
    import hashlib
    import hmac
    import importlib
    import io
    import json
    import sys
    import types

    for name in _PREIMPORT:  # loaded now, so that their functions are in the snapshot
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    from IPython import get_ipython

    shell = get_ipython()
    builtins_dict = vars(builtins)
    kept_builtins = dict(builtins_dict)
    kinds = (
        types.FunctionType,
        types.BuiltinFunctionType,
        types.MethodType,
        types.ModuleType,
        type,
        types.MethodDescriptorType,
        types.WrapperDescriptorType,
        types.BuiltinMethodType,
    )
    snapshot = _snapshot(sys.modules, kinds)
    modules, path, importer_cache = sys.modules, sys.path, sys.path_importer_cache
    meta_path, path_hooks = list(sys.meta_path), list(sys.path_hooks)
    sys_dict = vars(sys)
    names = (
        "stdout",
        "stderr",
        "displayhook",
        "excepthook",
        "modules",
        "path",
        "meta_path",
        "path_hooks",
        "path_importer_cache",
    )
    kept_sys: dict[str, Any] = {k: sys_dict[k] for k in names if k in sys_dict}
    callbacks = shell.events.callbacks
    events = {k: list(v) for k, v in callbacks.items()}
    shell_type = type(shell)
    user_expressions, formatter = shell_type.user_expressions, shell.display_formatter
    shell_dict = vars(shell)
    dumps, new_hmac, sha256 = json.dumps, hmac.new, hashlib.sha256
    string_io, redirect_stdout = io.StringIO, contextlib.redirect_stdout
    import_module, invalidate_caches = importlib.import_module, importlib.invalidate_caches
    evaluate, str_, getattr_, type_ = eval, str, getattr, type
    settrace, setprofile = sys.settrace, sys.setprofile
    secret = key.encode()
    stdout = kept_sys["stdout"]

    def restore() -> None:
        # builtins first, with dict methods only: every name below then means what it meant
        for name in [name for name in builtins_dict if name not in kept_builtins]:
            del builtins_dict[name]
        builtins_dict.update(kept_builtins)
        sys_dict.update(kept_sys)
        settrace(None)  # a trace or profile function could rewrite the check's frames
        setprofile(None)
        meta_path_now, path_hooks_now = kept_sys["meta_path"], kept_sys["path_hooks"]
        meta_path_now[:], path_hooks_now[:] = meta_path, path_hooks
        importer_cache.clear()
        for event, hooks in callbacks.items():
            hooks[:] = events.get(event, [])
        shell_dict.pop("user_expressions", None)
        shell_dict["display_formatter"] = formatter
        shell_type.user_expressions = user_expressions
        for name, (module, attrs) in snapshot.items():
            if modules.get(name) is not module:
                modules[name] = module
            now = vars(module)
            for attr, value in attrs.items():
                if now.get(attr) is not value:
                    try:
                        now[attr] = value
                    except TypeError:  # a read-only namespace: nothing could have changed it
                        pass

    def check(package: str, module_name: str, check_name: str, args_source: str) -> str:
        if package not in path:
            path.insert(0, package)
        for name in [n for n in modules if n.split(".")[0] == "loaderlab"]:
            if name.split(".")[:2] != ["loaderlab", "labs"]:
                del modules[name]
        invalidate_caches()
        out, passed, error = string_io(), False, None
        try:
            module = import_module(module_name)
            if not str_(getattr_(module, "__file__", "")).startswith(package):
                raise ImportError("the checker was not loaded from the grader's copy")
            checker = getattr_(module, check_name)
            args, kwargs = evaluate("(lambda *a, **k: (a, k))(" + args_source + ")", shell.user_ns)
            with redirect_stdout(out):
                passed = checker(*args, **kwargs) is True
        except Exception as exc:  # the verdict says why the check could not run
            error = type_(exc).__name__ + ": " + " ".join(str_(exc).split())[:200]
        finally:
            sys_dict["stdout"] = stdout
        text = dumps({"passed": passed, "out": out.getvalue()[-4000:], "error": error})
        return text + "|" + new_hmac(secret, text.encode(), sha256).hexdigest()

    def run(mode: str, *args: str) -> str | None:
        """``run("restore")`` or ``run("check", package, module, name, args_source)``."""
        if mode == "restore":
            restore()
            return None
        restore()  # again, as close to the call as possible
        return check(*args)

    return run
