"""loaderlab doctor (notebook 17): probe a user's DataLoader for the pitfalls the course reproduces.

``doctor(loader_or_factory)`` returns a ``Report`` of ``Finding``s (severity, code, measured message,
fix, a ``see:`` link computed from the notebooks' headings; registry: ``findings.FINDINGS``), probed on
pickled copies within a time budget;
the report lists every probe, run (with its time) or not (with why).
Command line: ``python -m loaderlab doctor my_module:make_loader [--json]`` (shape: ``JSON_SHAPE``).

The public names are imported on first use (PEP 562), so that no submodule imports this package
while it is still initialising.
"""

import importlib

_EXPORTS = {
    "describe": "core",
    "doctor": "core",
    "working_copy": "core",
    "FINDINGS": "findings",
    "PROBES": "findings",
    "Finding": "findings",
    "anchor": "links",
    "probe_for": "findings",
    "section_link": "links",
    "JSON_SHAPE": "report",
    "Report": "report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    """Import a public name's submodule on first use."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"loaderlab.doctor.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'loaderlab.doctor' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
