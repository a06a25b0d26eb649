"""loaderlab doctor: probe a user's DataLoader for the pitfalls the course reproduces.

``doctor(loader_or_factory)`` returns a ``Report``: one ``Finding`` per measured problem, each
with a severity ("info", "warning", "error"), a code, a sentence with the figure behind it, a
one-line fix and the notebook section that reproduces the pitfall, all from one registry
(``findings.FINDINGS``). The probes (``probes.Doctor``) run on pickled copies of the loader's
dataset, sampler and generator, stop at a time budget, shut their workers down, and put the
global random generators back as they were. ``report.to_json()`` gives the shape ``JSON_SHAPE``.

Command line: ``python -m loaderlab doctor my_module:make_loader [--json]`` (``cli.py``).
"""

from loaderlab.doctor.core import describe, doctor, working_copy
from loaderlab.doctor.findings import FINDINGS, PROBES, Finding, anchor, probe_for, section_link
from loaderlab.doctor.report import JSON_SHAPE, Report

__all__ = ["FINDINGS", "JSON_SHAPE", "PROBES", "Finding", "Report", "anchor", "describe", "doctor",
           "probe_for", "section_link", "working_copy"]
