"""The doctor's report: findings worst first, figures per probe, probes run and skipped; as text
for people (``str(report)``) and as JSON for CI (``report.to_json()``, shape in ``JSON_SHAPE``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from loaderlab.doctor.findings import FINDINGS, PROBES, SEVERITIES, Finding

# the documented shape of ``python -m loaderlab doctor --json``: key -> type (a list: one of these values)
JSON_SHAPE: dict[str, Any] = {
    "loader": str, "wall_s": float, "worst": [None, *SEVERITIES],
    "counts": {s: int for s in SEVERITIES},
    "findings": [{"code": str, "severity": str, "probe": str, "message": str, "figures": dict, "fix": str,
                  "link": str}],
    "figures": dict, "probes_run": [str], "probes_skipped": dict,
}


@dataclass
class Report:
    """What ``doctor`` found: ``findings`` (worst first), figures per probe, probes run/skipped."""

    findings: list[Finding]
    figures: dict[str, dict[str, Any]]
    probes_run: list[str]
    probes_skipped: dict[str, str]
    wall_s: float
    describe: str

    def at_least(self, severity: str) -> list[Finding]:
        """Return the findings whose severity is ``severity`` or worse."""
        if severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {severity!r}")
        return [f for f in self.findings if SEVERITIES.index(f.severity) >= SEVERITIES.index(severity)]

    def codes(self, min_severity: str = "info") -> list[str]:
        """Return the codes of findings at ``min_severity`` or above, sorted."""
        return sorted(f.code for f in self.at_least(min_severity))

    @property
    def worst(self) -> str | None:
        """Return the worst severity found, or None when there is no finding."""
        return self.findings[0].severity if self.findings else None

    def summary(self) -> str:
        """Return one stable line per finding (severity and code, no figures)."""
        return "\n".join(f"{f.severity:7s} {f.code}" for f in self.findings) or "no findings"

    def counts(self) -> dict[str, int]:
        """Return the number of findings per severity."""
        return {s: sum(f.severity == s for f in self.findings) for s in SEVERITIES}

    def to_dict(self) -> dict[str, Any]:
        """Return the report as JSON-ready values, in the shape ``JSON_SHAPE`` documents."""
        return {"loader": self.describe, "wall_s": round(self.wall_s, 3), "worst": self.worst,
                "counts": self.counts(), "findings": [f.to_dict() for f in self.findings],
                "figures": self.figures, "probes_run": list(self.probes_run),
                "probes_skipped": dict(self.probes_skipped)}

    def to_json(self, indent: int | None = 2) -> str:
        """Return the report as a JSON document (numbers from NumPy become plain numbers)."""
        return json.dumps(self.to_dict(), indent=indent, default=_plain)

    def __str__(self) -> str:
        n = self.counts()
        lines = [f"loaderlab doctor: {self.describe}",
                 f"probed in {self.wall_s:.1f} s; {n['error']} error(s), {n['warning']} warning(s), {n['info']} note(s)"]
        lines += [str(f) for f in self.findings] or ["No problem found by the probes that ran."]
        if self.probes_skipped:
            lines.append("not probed: " + "; ".join(f"{k} ({v})" for k, v in self.probes_skipped.items()))
        return "\n".join(lines)

    __repr__ = __str__


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else str(value)


def shape_errors(data: Any, shape: Any = JSON_SHAPE, where: str = "report") -> list[str]:
    """Return what in ``data`` (a parsed ``--json`` report) does not match ``JSON_SHAPE``; [] when valid."""
    if isinstance(shape, dict):
        if not isinstance(data, dict):
            return [f"{where} is not an object"]
        errors = [f"{where} lacks {k!r}" for k in shape if k not in data]
        errors += [f"{where} has unknown key {k!r}" for k in data if k not in shape]
        return errors + [e for k in shape if k in data for e in shape_errors(data[k], shape[k], f"{where}.{k}")]
    if isinstance(shape, list) and shape and isinstance(shape[0], (dict, type)) and len(shape) == 1:
        if not isinstance(data, list):
            return [f"{where} is not a list"]
        return [e for i, item in enumerate(data) for e in shape_errors(item, shape[0], f"{where}[{i}]")]
    if isinstance(shape, list):
        return [] if data in shape else [f"{where} is {data!r}, not one of {shape}"]
    if shape is float:
        return [] if isinstance(data, (int, float)) else [f"{where} is not a number"]
    errors = [] if isinstance(data, shape) else [f"{where} is not a {shape.__name__}"]
    if where.endswith(".code") and data not in FINDINGS or where.endswith(".probe") and data not in (*PROBES, "any"):
        errors.append(f"{where} {data!r} is not in the registry")
    return errors
