"""Under fork, note every DataLoader whose workers could not start under spawn or forkserver.

Imported by this folder's sitecustomize when LOADERLAB_SPAWN_GUARD names a folder (the test
suite sets it for each notebook's kernel, conftest.py). When a loader that leaves the start
method to the default starts workers by fork, what spawn would send each worker (the dataset,
collate_fn, worker_init_fn) is pickled into nothing, and every class or function that pickle
would find only in ``__main__`` (a notebook cell, which a spawned worker cannot import), and
every object pickle refuses, is written to ``<folder>/<pid>.txt``. Tensors and arrays are not
copied (spawn would share or copy them, never refuse them). The notebook still runs as it would.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import multiprocessing
import os
import pickle
import sys
import types
from pathlib import Path

TARGET = "torch.utils.data.dataloader"


class _Discard:
    def write(self, data: bytes) -> int:
        return len(data)


def _nothing():
    return None


class _Scan(pickle.Pickler):
    """Pickles into nothing; collects the ``__main__`` classes and functions it meets."""

    def __init__(self) -> None:
        super().__init__(_Discard(), protocol=pickle.HIGHEST_PROTOCOL)
        self.in_main: set[str] = set()

    def reducer_override(self, obj):
        arrays = tuple(
            getattr(sys.modules.get(m), n, type(None)) for m, n in (("torch", "Tensor"), ("numpy", "ndarray"))
        )
        if isinstance(obj, arrays):
            return _nothing, ()
        if isinstance(obj, (type, types.FunctionType)) and getattr(obj, "__module__", None) == "__main__":
            self.in_main.add(obj.__qualname__)
            return _nothing, ()
        return NotImplemented


def problems(loader) -> list[str]:
    """What spawn could not send to this loader's workers (empty when it could)."""
    found = []
    for name in ("dataset", "collate_fn", "worker_init_fn"):
        scan = _Scan()
        try:
            scan.dump(getattr(loader, name))
        except Exception as exc:  # what spawn would raise too
            found.append(f"{name}: cannot be pickled: {type(exc).__name__}: {str(exc)[:120]}")
        found += [
            f"{name}: {qualname} is defined in __main__ (a notebook cell)"
            for qualname in sorted(scan.in_main)
        ]
    return found


def _patch(module: types.ModuleType) -> None:
    iterator = module._MultiProcessingDataLoaderIter
    original = iterator.__init__

    def __init__(self, loader, *args, **kwargs):
        if loader.multiprocessing_context is None and multiprocessing.get_start_method() == "fork":
            found = problems(loader)
            if found:
                folder = Path(os.environ["LOADERLAB_SPAWN_GUARD"])
                with open(folder / f"{os.getpid()}.txt", "a") as out:
                    out.write("".join(f"{line}\n" for line in found))
        original(self, loader, *args, **kwargs)

    iterator.__init__ = __init__


class _Finder(importlib.abc.MetaPathFinder):
    """Patches torch's DataLoader module right after it is first imported."""

    def find_spec(self, name, path, target=None):
        if name != TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _patch(module)

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """Patch now if torch's DataLoader is imported already, else when it is."""
    if TARGET in sys.modules:
        _patch(sys.modules[TARGET])
    else:
        sys.meta_path.insert(0, _Finder())
