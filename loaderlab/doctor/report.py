"""The doctor's report: findings worst first, figures per probe, every probe run (with its time) or
skipped (with why); as text for people (``str(report)``) and as JSON for CI (``report.to_json()``,
JSON Schema ``JSON_SHAPE``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from loaderlab.doctor.findings import FINDINGS, PROBES, SEVERITIES, Finding

_STR, _OBJ = {"type": "string"}, {"type": "object"}
_FINDING = {
    "code": {"enum": sorted(FINDINGS)},
    "severity": {"enum": list(SEVERITIES)},
    "probe": {"enum": [*PROBES, "any"]},
    "message": _STR,
    "figures": _OBJ,
    "fix": _STR,
    "link": _STR,
}
_PROBE = {
    "name": {"enum": list(PROBES)},
    "ran": {"type": "boolean"},
    "seconds": {"type": ["number", "null"]},
    "why": {"type": ["string", "null"]},
}
_REPORT = {
    "loader": _STR,
    "wall_s": {"type": "number"},
    "worst": {"enum": [None, *SEVERITIES]},
    "counts": {
        "type": "object",
        "required": list(SEVERITIES),
        "properties": {s: {"type": "integer"} for s in SEVERITIES},
    },
    "findings": {
        "type": "array",
        "items": {
            "type": "object",
            "required": list(_FINDING),
            "additionalProperties": False,
            "properties": _FINDING,
        },
    },
    "figures": _OBJ,
    # every probe asked for, in order: ran (seconds it took) or not (why: nothing to look at,
    # workers cannot start, time budget spent, ...)
    "probes": {
        "type": "array",
        "items": {
            "type": "object",
            "required": list(_PROBE),
            "additionalProperties": False,
            "properties": _PROBE,
        },
    },
}
# the documented shape of ``python -m loaderlab doctor --json``, as a JSON Schema (draft 2020-12)
JSON_SHAPE: dict[str, Any] = {
    "type": "object",
    "required": list(_REPORT),
    "additionalProperties": False,
    "properties": _REPORT,
}


@dataclass
class Report:
    """What ``doctor`` found: ``findings`` (worst first), figures per probe, and ``probes``:
    ``{name: {"ran": bool, "seconds": float | None, "why": str | None}}`` for every probe asked for."""

    findings: list[Finding]
    figures: dict[str, dict[str, Any]]
    probes: dict[str, dict[str, Any]]
    wall_s: float
    describe: str

    @property
    def probes_run(self) -> list[str]:
        """Return the probes that ran, in order."""
        return [name for name, p in self.probes.items() if p["ran"]]

    @property
    def probes_skipped(self) -> dict[str, str]:
        """Return ``{probe: why}`` for the probes that did not run."""
        return {name: p["why"] for name, p in self.probes.items() if not p["ran"]}

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

    def to_json(self, indent: int | None = 2) -> str:
        """Return the report as a JSON document in the shape ``JSON_SHAPE`` (NumPy numbers as numbers)."""
        data = {
            "loader": self.describe,
            "wall_s": round(self.wall_s, 3),
            "worst": self.worst,
            "counts": self.counts(),
            "findings": [f.to_dict() for f in self.findings],
            "figures": self.figures,
            "probes": [{"name": k, **v} for k, v in self.probes.items()],
        }
        return json.dumps(data, indent=indent, default=lambda v: v.item() if hasattr(v, "item") else str(v))

    def __str__(self) -> str:
        n = self.counts()
        lines = [
            f"loaderlab doctor: {self.describe}",
            f"probed in {self.wall_s:.1f} s; {n['error']} "
            f"error(s), {n['warning']} warning(s), {n['info']} note(s)",
        ]
        lines += [str(f) for f in self.findings] or ["No problem found by the probes that ran."]
        ran = [f"{k} {p['seconds']:.1f} s" for k, p in self.probes.items() if p["ran"]]
        lines.append("probes run: " + (", ".join(ran) or "none"))
        if self.probes_skipped:
            lines.append("not run: " + "; ".join(f"{k} ({v})" for k, v in self.probes_skipped.items()))
        return "\n".join(lines)

    __repr__ = __str__
