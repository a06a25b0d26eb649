"""Plots of what the instruments measured: ``plot_timeline`` (00, 01) and ``plot_worker_memory``
(06); the only module that imports matplotlib. Every plot has labelled axes with units; the
caller passes a title that states the finding (computed from the numbers, not typed in)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from loaderlab.measure import MemoryRecord, Timeline


def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def plot_timeline(timeline: Timeline, title: str, ax: Axes | None = None) -> Axes:
    """Gantt chart of a ``Timeline``: one row per worker, one colour per worker, a bar per
    batch with its number; below, the main process: red while it waits for a batch, grey
    while it runs the loop body (the training step). With a legend."""
    if not isinstance(timeline, Timeline):
        raise TypeError(f"timeline must be a Timeline from a Tracer, got {type(timeline).__name__}")
    ax = _axes(ax, (9, 3.2))
    workers = sorted({r["worker"] for r in timeline.records})
    rows = {w: i + 1 for i, w in enumerate(workers)}
    # 3 is red
    colours = {w: plt.get_cmap("tab10")(i % 10 if i % 10 != 3 else 9) for i, w in enumerate(workers)}
    label_bars = len(timeline.records) <= 40
    for r in timeline.records:
        y, width = rows[r["worker"]], r["end"] - r["start"]
        ax.broken_barh(
            [(r["start"], width)],
            (y - 0.35, 0.7),
            facecolor=colours[r["worker"]],
            edgecolor="black",
            linewidth=0.4,
        )
        if label_bars:
            ax.text(r["start"] + width / 2, y, str(r["batch"]), ha="center", va="center", fontsize=7)
        ax.broken_barh([(r["requested"], max(r["wait"], 1e-4))], (-0.35, 0.7), facecolor="tab:red")
        ax.broken_barh(
            [(r["received"], r["step_end"] - r["received"])],
            (-0.35, 0.7),
            facecolor="0.8",
            edgecolor="0.4",
            linewidth=0.4,
        )
    names = ["main process"] + ["main process fetch" if w == -1 else f"worker {w}" for w in workers]
    ax.set_yticks(range(len(names)), names)
    handles = [
        Patch(
            facecolor=colours[w],
            edgecolor="black",
            linewidth=0.4,
            label="batch made in the main process" if w == -1 else f"batch made by worker {w} (its number)",
        )
        for w in workers
    ]
    handles += [
        Patch(facecolor="tab:red", label="main process waits for data"),
        Patch(facecolor="0.8", edgecolor="0.4", label="main process runs the step"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    ax.set_xlabel("time since iter(loader) (s)")
    ax.set_title(title)
    ax.set_xlim(0, timeline.epoch_s * 1.02)
    ax.figure.tight_layout()  # type: ignore[union-attr]  # the Axes' own Figure, never a SubFigure
    return ax


def plot_worker_memory(
    records: Sequence[MemoryRecord], title: str, metric: str = "uss", ax: Axes | None = None
) -> Axes:
    """Memory of each process over time: ``metric`` is ``"uss"``, ``"pss"`` or ``"rss"`` (MB)."""
    if metric not in ("uss", "pss", "rss"):
        raise ValueError(f"metric must be 'uss', 'pss' or 'rss', got {metric!r}")
    if not records:
        raise ValueError("records is empty: did the sampler run while workers were alive?")
    ax = _axes(ax, (8, 3.5))
    pids = list(dict.fromkeys(r.pid for r in records))
    worker_no = 0
    for pid in pids:
        rows = [r for r in records if r.pid == pid]
        values = [getattr(r, f"{metric}_mb") for r in rows]
        if any(v is None for v in values):
            continue
        if rows[0].role == "main":
            label = "main process"
        else:
            label = f"worker {worker_no}"
            worker_no += 1
        ax.plot([r.t for r in rows], values, label=label, linestyle="--" if rows[0].role == "main" else "-")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"{metric.upper()} (MB)")
    ax.set_title(title)
    ax.legend(loc="best", fontsize="small")
    ax.figure.tight_layout()  # type: ignore[union-attr]  # the Axes' own Figure, never a SubFigure
    return ax
