"""loaderlab doctor (notebook 17): probe a user's DataLoader for the pitfalls the course reproduces.

``doctor(loader_or_factory)`` returns a ``Report`` of ``Finding``s (severity, code, measured message,
fix, notebook section; registry: ``findings.FINDINGS``), probed on pickled copies within a time budget.
Command line: ``python -m loaderlab doctor my_module:make_loader [--json]`` (shape: ``JSON_SHAPE``).
"""

from loaderlab.doctor.core import describe, doctor, working_copy
from loaderlab.doctor.findings import FINDINGS, PROBES, Finding, anchor, probe_for, section_link
from loaderlab.doctor.report import JSON_SHAPE, Report

__all__ = ["FINDINGS", "JSON_SHAPE", "PROBES", "Finding", "Report", "anchor", "describe", "doctor",
           "probe_for", "section_link", "working_copy"]
