"""The doctor's one registry of findings (code -> severity, probe, message, fix, notebook section):
a probe reports ``finding(code, **figures)``, the registry's templates filled with its figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

SEVERITIES = ("info", "warning", "error")
NB = {n[:2]: n for n in (
    "02_batches_drop_last_and_samplers.ipynb", "03_workers_and_prefetch.ipynb",
    "04_custom_dataset_and_caching.ipynb", "05_collate_and_padding.ipynb", "06_copy_on_write_memory.ipynb",
    "07_worker_seeds_and_reproducibility.ipynb", "08_hangs_crashes_and_lifecycle.ipynb",
    "09_weighted_sampling.ipynb", "10_distributed_sampling.ipynb", "11_iterable_datasets.ipynb",
    "12_start_methods.ipynb", "15_shared_memory_and_file_descriptors.ipynb", "17_doctor.ipynb",
    "19_persistent_workers_and_pin_memory.ipynb",
)}


class Spec(NamedTuple):
    """One code: its usual severity (a probe may change it), the one probe that reports it, message
    and fix templates, and the notebook and heading of the section that reproduces it."""

    severity: str
    probe: str
    message: str
    fix: str
    notebook: str
    heading: str


FINDINGS: dict[str, Spec] = {
    "loader.raises": Spec(
        "error", "any", "the {probe} probe failed: {error}",
        "Run one epoch with num_workers=0 to see the full traceback in the main process.",
        "08", "## 2. A worker that raises, a worker that is killed"),
    "pickle.fails": Spec(
        "error", "pickling", "{what} cannot be pickled: {when}.",
        "Define datasets, collate_fn and worker_init_fn at module level in an importable file (no lambdas, "
        "no open files, locks or clients as attributes).", "12", "## 3. What must be picklable"),
    "pickle.main_module": Spec(
        "warning", "pickling", "{names} defined in __main__: spawn workers started from a notebook or an "
        "interactive session cannot import it.",
        "Move these classes and functions into a module and import them.",
        "12", "## 3. What must be picklable"),
    "dataset.open_file": Spec(
        "error", "pickling", "the dataset holds open {names}: with fork every worker shares its offset and "
        "reads wrong records without an error; with spawn the dataset cannot be pickled.",
        "Keep the path; open the file lazily in each worker (on the first __getitem__) and leave it out of "
        "__getstate__.", "08", "### Another shared resource: a file opened in `__init__`"),
    "collate.variable_length": Spec(
        "error", "collate", "{count} samples hold tensors of different shapes ({shapes}): the default "
        "collate_fn cannot stack them, so a batch raises '{error}'.",
        "Pad in a collate_fn (pad_sequence plus the lengths or a mask); bucket by length to waste less "
        "padding.", "05", "## 2. `pad_collate`: padded ids, an attention mask, labels"),
    "memory.shm_too_small": Spec(
        "error", "collate", "a batch is {batch_mb} MB and {workers} workers x prefetch_factor {prefetch} "
        "keep up to {need_mb} MB in /dev/shm, which has {shm_mb} MB: workers die with 'Bus error' or 'No "
        "space left on device'.",
        "Send smaller batches (uint8, converted after the transfer), lower num_workers x prefetch_factor, or "
        "enlarge /dev/shm (docker run --shm-size).", "15", "## 4. A 64 MB `/dev/shm` (Docker's default)"),
    "batch.last_size_1": Spec(
        "warning", "batches", "{samples} samples in batches of {batch_size} leave a batch of 1 sample per "
        "epoch: BatchNorm raises 'Expected more than 1 value per channel when training' on it.",
        "Shuffled training loader: drop_last=True (a different sample sits out each epoch); keep "
        "drop_last=False for validation.",
        "02", "## 4. Fix: `drop_last=True` for training, `drop_last=False` for validation"),
    "iterable.duplicates": Spec(
        "error", "stream", "one epoch delivered {delivered} items for the {held} the stream holds: {extra} "
        "arrived more than once (each of the {workers} workers read the whole stream).",
        "Shard the stream in __iter__ with torch.utils.data.get_worker_info() (id, num_workers).",
        "11", "## 2. Shard the stream per worker"),
    "iterable.lost_items": Spec(
        "error", "stream", "one epoch delivered {delivered} of the {held} items the stream holds: {lost} "
        "never reach training ({why}).", "{advice}",
        "11", "## 4. Each worker ends with its own partial batch"),
    "iterable.partial_batches": Spec(
        "warning", "stream", "one epoch gave {count} partial batches (sizes {sizes}) instead of at most 1: "
        "each of the {workers} workers batches its own items and ends with its own remainder.",
        "Shard the stream in blocks of batch_size items (worker k takes blocks k, k + num_workers, ...); "
        "drop_last=True is no fix: it would lose {would_lose} items every epoch.",
        "11", "## 4. Each worker ends with its own partial batch"),
    "iterable.batch_of_1": Spec(
        "warning", "stream", "one epoch of the stream gave {ones} batch(es) of 1 item (batch sizes "
        "{sizes}; items per worker {per_worker}): BatchNorm raises 'Expected more than 1 value per "
        "channel when training' on it.",
        "drop_last=True drops every worker's partial batch: {would_lose} item(s) per epoch here; to lose "
        "fewer, shard in blocks of batch_size items (worker k takes blocks k, k + num_workers, ...).",
        "11", "## 4. Each worker ends with its own partial batch"),
    "iterable.wrong_length": Spec(
        "warning", "stream", "len(dataset) says {reported} but one epoch delivered {delivered} items: "
        "len(loader), a progress bar or a learning-rate schedule sized by it is off by {off}.",
        "Make __len__ count what one epoch delivers over all workers (the whole stream, not one worker's "
        "share), or drop __len__.", "11", "## 2. Shard the stream per worker"),
    "random.duplicate_across_workers": Spec(
        "error", "random", "the samples are random ({random}/{indices} differ when fetched twice in one "
        "process) but the same index fetched in 2 workers drew the same random value(s) ({values} per "
        "sample) in {pairs}/{pairs} pairs: every worker draws from a copy of the same generator.",
        "Keep a seed in the Dataset, never a generator: build the generator lazily in the worker from "
        "get_worker_info().seed combined with your seed, and rebuild it when that seed changes "
        "(docs/snippets/worker_seeding.py).",
        "07", "## 4. Fixes that miss, and the recipe: build the generator in the worker"),
    "random.repeats_across_epochs": Spec(
        "warning", "random", "epoch 2 drew the same random value(s) as epoch 1 ({values} per sample) in "
        "{compared}/{compared} fetches: each epoch's workers start from the same generator state.",
        "Build the generator in the worker from get_worker_info().seed (new every epoch) combined with "
        "the Dataset's own seed, never from a fixed number or worker_id (docs/snippets/worker_seeding.py).",
        "07", "## 7. \"Reset the generator every epoch\" repeats every epoch"),
    "persistent.stale_state": Spec(
        "error", "persistent", "after the epoch change this process's dataset has new {stale} but the "
        "persistent workers still read the old value(s) in {rows}/{rows} fetches.",
        "Send per-epoch values with the index (a sampler yielding (index, epoch)) or keep them in a "
        "shared-memory tensor; or drop persistent_workers.",
        "08", "## 4. Persistent workers and stale dataset state"),
    "distributed.no_set_epoch": Spec(
        "warning", "samplers", "two epochs of the DistributedSampler gave the same {indices} indices in the "
        "same order: without set_epoch every epoch repeats the first shuffle.",
        "Call loader.sampler.set_epoch(epoch) at the start of every epoch.",
        "10", "## 2. The same order every epoch — unless you call `set_epoch`"),
    "distributed.padding": Spec(
        "warning", "samplers", "{samples} samples on {replicas} ranks: the DistributedSampler pads the "
        "shards with {repeats} repeated sample(s) so that each rank gets {per_rank}; an evaluation counts "
        "them twice.",
        "For evaluation shard without padding (indices[rank::num_replicas]) or count each sample once; for "
        "training the repeats are harmless.", "10", "## 4. Padding skews an evaluation metric"),
    "distributed.drops": Spec(
        "warning", "samplers", "{samples} samples on {replicas} ranks with drop_last=True: every epoch drops "
        "{dropped} sample(s) so that each rank gets {per_rank}.",
        "Keep drop_last=False (the shards are padded instead), or shard without padding "
        "(indices[rank::num_replicas]).", "10", "## 3. When the dataset does not divide by the world size"),
    "sampler.weights_length": Spec(
        "error", "coverage", "the WeightedRandomSampler holds {weights} weights for a dataset of {samples} "
        "samples: one epoch draws {distinct} distinct indices, {effect}.",
        "Give one weight per sample (len(weights) == len(dataset)): from class weights, index them by each "
        "sample's label, weights = class_weights[labels].",
        "09", "## 3. Weights that do balance: inverse class frequency"),
    "sampler.weighted_mix": Spec(
        "warning", "samplers", "the WeightedRandomSampler's weights give an expected class mix of {mix} per "
        "epoch (the labels alone: {plain}).",
        "To balance the classes weight each sample by 1 / (count of its class); to keep the mix, ignore this "
        "note.", "09", "## 3. Weights that do balance: inverse class frequency"),
    "memory.python_container": Spec(
        "warning", "containers", "{name} is a Python container of {items:,} objects (~{mb:.0f} MB): with "
        "fork each worker's reads write their reference counts and copy the pages; with spawn each worker "
        "unpickles a copy.",
        "Store it as one NumPy array or tensor (strings: one byte buffer plus offsets).",
        "06", "## 6. Fixes that keep the table shared"),
    "memory.worker_growth": Spec(
        "warning", "speed", "a worker's private memory (USS) grew by {mb:.0f} MB while it fetched {batches} "
        "batches, without being asked to store anything.",
        "Look for Python lists/dicts read by __getitem__ (copy-on-write) or caches filled in workers.",
        "06", "## 2. Measure it: USS per worker, PSS in total"),
    "speed.more_workers": Spec(
        "warning", "speed", "num_workers={best} delivered {best_rate:.0f} samples/s against {rate:.0f} with "
        "your num_workers={workers}: {speedup}x ({how}).",
        "{advice}", "03", "## 2. How many workers? Two kinds of slow `__getitem__`"),
    "speed.workers_slower": Spec(
        "info", "speed", "num_workers={best} delivered {best_rate:.0f} samples/s against {rate:.0f} with "
        "your num_workers={workers} ({speedup}x, {how}): each batch costs less to make than to send "
        "between processes.",
        "For data already in memory use num_workers=0 and fetch whole batches (__getitems__); with a "
        "training step per batch the difference often vanishes (measure with step_s).",
        "04", "## 4. Counter-case: in-memory data plus workers is slower"),
    "speed.workers_over_cores": Spec(
        "warning", "speed", "num_workers={workers} on {cores} usable CPU cores: your setting delivered "
        "{rate:.0f} samples/s against {best_rate:.0f} with num_workers={best} ({ratio}x, {how}); {verdict}.",
        "{advice}", "03", "## 3. torch's own warning, and what extra workers cost"),
    "torch.worker_count": Spec(
        "info", "any", "torch warned: {text}",
        "torch counts the CPU affinity only; the doctor's speed probe measures whether the extra workers "
        "pay off (speed.workers_over_cores).",
        "03", "## 3. torch's own warning, and what extra workers cost"),
    "torch.iterable_length": Spec(
        "warning", "any", "torch warned: {text}",
        "An IterableDataset's __len__ must count what one epoch delivers over all workers: shard the stream "
        "with get_worker_info(), or drop __len__.", "11", "## 1. Two workers, every item twice"),
    "torch.pin_memory": Spec(
        "info", "any", "torch warned: {text}",
        "pin_memory=True helps only host-to-accelerator copies; without an accelerator it does nothing.",
        "19", "## 2. `pin_memory` without an accelerator"),
    "loader.warning": Spec(
        "warning", "any", "{category} raised {times} time(s) while probing (first: {where}): {text}",
        "Run one epoch with num_workers=0 under python -W error to see the line that warns.",
        "17", "## 2. Reading a report"),
}
PROBES = tuple("pickling collate coverage stream batches random persistent samplers containers speed".split())


def anchor(heading: str) -> str:
    """Return the Jupyter anchor of a markdown heading (no ``#``, backticks, ``*``; spaces as ``-``)."""
    return heading.lstrip("#").strip().replace("`", "").replace("*", "").replace(" ", "-")


def section_link(code: str) -> str:
    """Return ``notebooks/NN_name.ipynb#anchor`` for a finding code."""
    spec = FINDINGS[code]
    return f"notebooks/{NB[spec.notebook]}#{anchor(spec.heading)}"


def probe_for(code: str) -> str:
    """Return the name of the probe (one of ``PROBES``) that reports finding ``code``."""
    if code not in FINDINGS:
        raise ValueError(f"code must be one of {sorted(FINDINGS)}, got {code!r}")
    if FINDINGS[code].probe not in PROBES:
        raise ValueError(f"code {code!r} is not reported by one probe alone")
    return FINDINGS[code].probe


@dataclass
class Finding:
    """One measured problem (or fact): severity, code, message with its figures, fix, link."""

    severity: str
    code: str
    message: str
    fix: str
    figures: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")
        if self.code not in FINDINGS:
            raise ValueError(f"code {self.code!r} is not in the registry FINDINGS")

    @property
    def link(self) -> str:
        return section_link(self.code)

    @property
    def probe(self) -> str:
        return self.figures.get("probe", FINDINGS[self.code].probe)

    def to_dict(self) -> dict[str, Any]:
        """Return the finding as JSON-ready values (see ``report.JSON_SHAPE``)."""
        return {k: getattr(self, k) for k in "code severity probe message figures fix link".split()}

    def __str__(self) -> str:
        return f"[{self.severity}] {self.code}: {self.message}\n    fix: {self.fix}\n    see: {self.link}"


def finding(code: str, severity: str | None = None, **figures: Any) -> Finding:
    """Return the finding ``code`` with the registry's message and fix filled with ``figures``."""
    spec = FINDINGS[code]
    return Finding(severity or spec.severity, code, spec.message.format(**figures),
                   spec.fix.format(**figures), figures)
