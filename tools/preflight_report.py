"""What ``make preflight --report FILE`` writes and ``--summarise FOLDER`` reads (tools/preflight.py
runs the checks): one JSON file per student — who, the machine, the phase and each check — and
the instructor's table of a folder of them. Standard library only, like preflight before setup."""

from __future__ import annotations

import getpass
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

FORMAT = "loaderlab-preflight/1"
FAIL = "fail"  # a check's status in the report (tools/preflight.py's FAIL)


def write(
    path: Path,
    results: Sequence[tuple[str, str, str, str]],
    deep: bool,
    machine: Mapping[str, Any],
    name: str = "",
) -> None:
    """Write what preflight found as JSON: who (``name``, else the user name), when, the
    ``machine`` (OS, Python, CPU type, cores, RAM, free disk), the phase (before or after setup)
    and each check ``(check, status, detail, fix)``."""
    try:
        user = getpass.getuser()
    except Exception:  # no user name where the environment has none
        user = ""
    data = {
        "format": FORMAT,
        "student": name or user,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        **machine,
        "phase": "after setup" if deep else "before setup",
        "checks": [{"check": c, "status": st, "detail": d, "fix": f} for c, st, d, f in results],
    }
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def summarise(folder: Path) -> str:
    """One table of the preflight reports in ``folder`` (``*.json``, subfolders too): who is
    ready, who needs what; then the failing checks counted. A file that is not a report is a row
    that says so."""
    rows = [("student", "OS", "Python", "cores", "RAM free", "phase", "ready", "needs")]
    needs: dict[str, int] = {}
    ready = 0
    for path in sorted(folder.rglob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") != FORMAT:
                raise ValueError("not a preflight report")
            failing = [c for c in data["checks"] if c["status"] == FAIL]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            rows.append((path.stem, "?", "?", "?", "?", "?", "?", f"unreadable: {exc}"[:60]))
            continue
        ok = not failing and data["phase"] == "after setup"
        ready += ok
        for check in failing:
            needs[check["check"]] = needs.get(check["check"], 0) + 1
        what = "; ".join(f"{c['check']}: {c['fix']}" for c in failing) or (
            "" if ok else "run `make lab`, then preflight again"
        )
        free = data.get("ram_available_gb")
        rows.append(
            (
                str(data.get("student") or path.stem),
                str(data.get("os", "?"))[:18],
                str(data.get("python", "?")),
                str(data.get("cores", "?")),
                "?" if free is None else f"{free:g} GB",
                data["phase"],
                "yes" if ok else "no",
                what,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1]
        for row in rows
    ]
    lines.append(f"{ready} of {len(rows) - 1} ready (every check passed after setup)")
    lines += [f"{count} × {check} failed" for check, count in sorted(needs.items(), key=lambda kv: -kv[1])]
    return "\n".join(lines)
