"""The doctor's ``see:`` links, computed from the notebooks' current headings.

``SEE`` maps each finding code to the places that teach it, best first: a notebook number and a
heading key (a section number such as ``"4."``, or words the heading contains). At run time the
link goes to the first place whose notebook exists and has such a heading, with JupyterLab's
anchor (the heading's text, spaces turned into ``-``, punctuation and case kept); a notebook that
exists without the heading, or one not written yet, gives the file link alone. A renamed heading
or notebook therefore never leaves a dead link. To move a link, edit its row of ``SEE``; the
planned file names of notebooks not yet written are in ``PLANNED``.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PLANNED = {  # notebooks the course plans, by number: the file name used until the notebook exists
    "03": "03_workers_and_prefetch.ipynb",
    "19": "19_persistent_workers_and_pin_memory.ipynb",
    "20": "20_worker_state_and_file_handles.ipynb",
    "21": "21_corrupt_and_missing_samples.ipynb",
    "22": "22_train_and_eval_transforms.ipynb",
    "24": "24_threads_inside_workers.ipynb",
}
SEE: dict[str, tuple[tuple[str, str], ...]] = {
    "loader.raises": (("21", "The error as you see it"), ("08", "A worker that raises")),
    "sample.raises": (("21", "The error as you see it"), ("08", "A worker that raises")),
    "sample.none": (("21", "The `return None` hack"), ("08", "A worker that raises")),
    "dataset.len_too_long": (("04", "map-style Dataset"),),
    "collate.unsupported_type": (("04", "injected transform"),),
    "batch.float64": (("04", "injected transform"),),
    "sampler.yields_batches": (("02", "is a `RandomSampler`"),),
    "pickle.fails": (("12", "What must be picklable"),),
    "pickle.main_module": (("12", "What must be picklable"),),
    "dataset.open_file": (("20", "A file opened in"), ("08", "Another shared resource")),
    "dataset.open_handle": (("20", "HDF5"), ("08", "Another shared resource")),
    "collate.variable_length": (("05", "pad_collate"),),
    "memory.shm_too_small": (("15", "/dev/shm"),),
    "batch.last_size_1": (("02", "Fix: `drop_last=True`"),),
    "batch.dropped_every_epoch": (("02", "Fix: `drop_last=True`"),),
    "iterable.duplicates": (("11", "Shard the stream per worker"),),
    "iterable.lost_items": (("11", "partial batch"),),
    "iterable.partial_batches": (("11", "partial batch"),),
    "iterable.batch_of_1": (("11", "partial batch"),),
    "iterable.wrong_length": (("11", "Shard the stream per worker"),),
    "random.duplicate_across_workers": (("07", "build the generator in the worker"),),
    "random.repeats_across_epochs": (("07", "repeats every epoch"),),
    "random.eval_transforms": (("22", "One dataset, two splits"),),
    "persistent.stale_state": (("20", "stale"), ("08", "Persistent workers and stale")),
    "distributed.no_set_epoch": (("10", "set_epoch"),),
    "distributed.padding": (("10", "Padding skews"),),
    "distributed.drops": (("10", "does not divide"),),
    "sampler.weights_length": (("09", "inverse class frequency"),),
    "sampler.weighted_mix": (("09", "inverse class frequency"),),
    "memory.python_container": (("06", "Fixes that keep the table shared"),),
    "memory.worker_growth": (("06", "USS per worker"),),
    "speed.more_workers": (("03", "How many workers"),),
    "speed.workers_slower": (("04", "in-memory data plus workers is slower"),),
    "speed.workers_over_cores": (("03", "torch's own warning"), ("03", "extra workers")),
    "workers.threads_oversubscribed": (("24", "Who sets which threads"), ("16", "threads")),
    "torch.worker_count": (("03", "torch's own warning"), ("03", "extra workers")),
    "torch.iterable_length": (("11", "Two workers, every item twice"),),
    "torch.pin_memory": (("19", "pin_memory"), ("03", "pin_memory")),
    "loader.warning": (("17", "Reading a report"),),
}


def anchor(heading: str) -> str:
    """Return JupyterLab's anchor of a markdown heading: its rendered text (no ``#``, code marks,
    emphasis or link targets) with spaces turned into ``-``, punctuation and case kept."""
    text = heading.lstrip("#").strip()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [text](url) renders as text
    parts = re.split(r"(`[^`]*`)", text)  # emphasis marks count outside code spans only
    text = "".join(p[1:-1] if p.startswith("`") else p.replace("**", "").replace("*", "") for p in parts)
    return text.replace(" ", "-")


def notebook_file(number: str, folder: Path = NOTEBOOKS) -> tuple[str, bool]:
    """Return the file name of notebook ``number`` (the one in ``folder``, else the planned name)
    and whether it exists."""
    found = sorted(folder.glob(f"{number}_*.ipynb")) if folder.is_dir() else []
    if found:
        return found[0].name, True
    return PLANNED.get(number, f"{number}.ipynb"), False


@functools.lru_cache(maxsize=64)
def _headings(path: Path, mtime: float) -> tuple[str, ...]:
    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    lines = [
        line
        for c in cells
        if c.get("cell_type") == "markdown"
        for line in "".join(c.get("source", "")).splitlines()
    ]
    return tuple(line.strip() for line in lines if re.match(r"#{1,6} ", line.strip()))


def headings(path: Path) -> tuple[str, ...]:
    """Return the markdown headings of a notebook, in order (read again when the file changes)."""
    return _headings(path, path.stat().st_mtime)


def find_heading(found: tuple[str, ...], key: str) -> str | None:
    """Return the first heading that ``key`` names: a section number (``"4."``) starts a ``##``
    heading; words are looked for in the heading's rendered text (case ignored)."""
    if re.fullmatch(r"\d+\.", key):
        return next((h for h in found if h.startswith(f"## {key} ")), None)
    return next(
        (h for h in found if key.lower() in anchor(h).replace("-", " ").lower() or key.lower() in h.lower()),
        None,
    )


def resolve(code: str, folder: Path = NOTEBOOKS) -> tuple[str, bool]:
    """Return ``(link, resolved)`` for a finding code: ``notebooks/NN_name.ipynb#anchor`` when a
    place of ``SEE[code]`` has its heading, else the first place's file link (``resolved`` False)."""
    fallback = None
    for number, key in SEE[code]:
        name, exists = notebook_file(number, folder)
        fallback = fallback or f"notebooks/{name}"
        if exists and (heading := find_heading(headings(folder / name), key)) is not None:
            return f"notebooks/{name}#{anchor(heading)}", True
    return str(fallback), False


def pending(code: str, folder: Path = NOTEBOOKS) -> str | None:
    """Return the number of the notebook that should teach ``code`` when it is not written yet (or
    lacks the heading): the link then goes to the next place of ``SEE[code]``, or to the file."""
    number, key = SEE[code][0]
    name, exists = notebook_file(number, folder)
    return None if exists and find_heading(headings(folder / name), key) is not None else number


def section_link(code: str) -> str:
    """Return the ``see:`` link of a finding code (see ``resolve``)."""
    return resolve(code)[0]
