"""The doctor's one registry of findings (code -> severity, probe, message, fix, notebook section):
a probe reports ``finding(code, **figures)``, the registry's templates filled with its figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from loaderlab.doctor.links import section_link

SEVERITIES = ("info", "warning", "error")


class Spec(NamedTuple):
    """One code: its usual severity (a probe may change it), the one probe that reports it, message
    and fix templates (its ``see:`` link comes from ``links.SEE``)."""

    severity: str
    probe: str
    message: str
    fix: str


FINDINGS: dict[str, Spec] = {
    "loader.raises": Spec(
        "error",
        "any",
        "the {probe} probe failed: {error}",
        "Run one epoch with num_workers=0 to see the full traceback in the main process.",
    ),
    "sample.raises": Spec(
        "error",
        "samples",
        "{where} raises {error} when fetched in this process ({failed} of the {checked} "
        "fetched raise{same}).",
        "Repair or remove what {where} reads (a truncated or missing file); to train without it, build the "
        "list of readable indices once before training and wrap the dataset in a Subset of them.",
    ),
    "sample.none": Spec(
        "error",
        "samples",
        "{where} is None ({count} of the {checked} fetched): the default collate_fn "
        "raises \"TypeError: ... found <class 'NoneType'>\" on every batch that holds one.",
        "Never return None from __getitem__: raise with the index and the path, and leave unreadable "
        "samples out of the index before training (a Subset of the readable indices).",
    ),
    "dataset.len_too_long": Spec(
        "error",
        "samples",
        "__len__ says {length} but indices {first} to {last} raise {error}: the data "
        "hold {first} samples, so every epoch fails once the sampler reaches index {first}.",
        "Make __len__ return the size of what __getitem__ reads (len(self.files), not a number kept "
        "apart), or build the index and the length from the same list.",
    ),
    "collate.unsupported_type": Spec(
        "error",
        "collate",
        "the default collate_fn cannot batch a {found} ({field}): '{error}'.",
        "{conversion}",
    ),
    "batch.float64": Spec(
        "warning",
        "collate",
        "the batch holds float64 tensors ({fields}) made from {source}: a float32 "
        "model raises 'expected scalar type Float but found Double' (or mat1 and mat2 dtypes differ), and "
        "each batch is twice the size.",
        "Convert in __getitem__: torch.from_numpy(row.astype(np.float32)) or torch.as_tensor(x, "
        "dtype=torch.float32) (NumPy's and Python's floats are float64).",
    ),
    "sampler.yields_batches": Spec(
        "error",
        "coverage",
        "the sampler yields {kind}s of indices (first: {first}) and the loader batches "
        "them again (batch_size={batch_size}): each batch is {batch_size} batches, with an extra leading "
        "dimension, and __getitem__ receives a {kind} instead of an index.",
        "Pass it as batch_sampler= (with no batch_size, shuffle, sampler or drop_last), or set "
        "batch_size=None.",
    ),
    "dataset.open_handle": Spec(
        "error",
        "pickling",
        "the dataset holds {names}, opened before the workers start: forked workers "
        "share one handle (HDF5 reads return wrong data or fail; LMDB forbids an environment used after "
        "fork); spawned workers cannot pickle it.",
        "Keep the path; open the file in each worker at its first __getitem__ (if self.file is None: open) "
        "and leave the handle out of __getstate__.",
    ),
    "workers.threads_oversubscribed": Spec(
        "warning",
        "threads",
        "each worker keeps {threads} threads busy while it fetches (measured: over "
        "{fetches} fetches its other threads used {other_ms} ms of CPU beside the fetching thread's "
        "{own_ms} ms; {libs}): {workers} workers x {threads} = {busy} busy threads on {cores} core(s), "
        "which slow each other down.",
        "Give each worker one thread in its worker_init_fn: threadpoolctl.threadpool_limits(1) (NumPy's "
        "BLAS, OpenMP) and cv2.setNumThreads(1); or start the program with OMP_NUM_THREADS=1.",
    ),
    "random.eval_transforms": Spec(
        "warning",
        "random",
        "the loader reads in order (shuffle=False), as an evaluation loader does, yet "
        "{random}/{indices} samples differ when the same index is fetched twice: random transforms make an "
        "evaluation metric change from run to run (and a training loader that reads in order does not "
        "shuffle).",
        "Evaluation: give its Dataset deterministic transforms only (resize, centre crop, normalise), e.g. "
        "a train flag choosing the transforms; training: shuffle=True.",
    ),
    "pickle.fails": Spec(
        "error",
        "pickling",
        "{what} cannot be pickled: {when}.",
        "Define datasets, collate_fn and worker_init_fn at module level in an importable file (no lambdas, "
        "no open files, locks or clients as attributes).",
    ),
    "pickle.main_module": Spec(
        "warning",
        "pickling",
        "{names} defined in __main__: spawn workers started from a notebook or an "
        "interactive session cannot import it.",
        "Move these classes and functions into a module and import them.",
    ),
    "dataset.open_file": Spec(
        "error",
        "pickling",
        "the dataset holds open {names}: with fork every worker shares its offset and "
        "reads wrong records without an error; with spawn the dataset cannot be pickled.",
        "Keep the path; open the file lazily in each worker (on the first __getitem__) and leave it out of "
        "__getstate__.",
    ),
    "collate.variable_length": Spec(
        "error",
        "collate",
        "{count} samples hold tensors of different shapes ({shapes}): the default "
        "collate_fn cannot stack them, so a batch raises '{error}'.",
        "Pad in a collate_fn (pad_sequence plus the lengths or a mask); bucket by length to waste less "
        "padding.",
    ),
    "memory.shm_too_small": Spec(
        "error",
        "collate",
        "a batch is {batch_mb} MB and {workers} workers x prefetch_factor {prefetch} "
        "keep up to {need_mb} MB in /dev/shm, which has {shm_mb} MB: workers die with 'Bus error' or 'No "
        "space left on device'.",
        "Send smaller batches (uint8, converted after the transfer), lower num_workers x prefetch_factor, or "
        "enlarge /dev/shm (docker run --shm-size).",
    ),
    "batch.last_size_1": Spec(
        "warning",
        "batches",
        "{samples} samples in batches of {batch_size} leave a batch of 1 sample per "
        "epoch: BatchNorm raises 'Expected more than 1 value per channel when training' on it.",
        "Shuffled training loader: drop_last=True (a different sample sits out each epoch); keep "
        "drop_last=False for validation.",
    ),
    "batch.dropped_every_epoch": Spec(
        "warning",
        "batches",
        "drop_last=True without shuffling drops the same {dropped} of the {samples} "
        "samples ({share:.0%}) every epoch: samples {first} to {last} never reach training.",
        "shuffle=True (then a different remainder sits out each epoch), or drop_last=False.",
    ),
    "iterable.duplicates": Spec(
        "error",
        "stream",
        "one epoch delivered {delivered} items for the {held} the stream holds: {extra} "
        "arrived more than once (each of the {workers} workers read the whole stream).",
        "Shard the stream in __iter__ with torch.utils.data.get_worker_info() (id, num_workers).",
    ),
    "iterable.lost_items": Spec(
        "error",
        "stream",
        "one epoch delivered {delivered} of the {held} items the stream holds: {lost} "
        "({share:.0%}) never reach training ({why}); {which}.",
        "{advice}",
    ),
    "iterable.partial_batches": Spec(
        "warning",
        "stream",
        "one epoch gave {count} partial batches (sizes {sizes}) instead of at most 1: "
        "each of the {workers} workers batches its own items and ends with its own remainder.",
        "Shard the stream in blocks of batch_size items (worker k takes blocks k, k + num_workers, ...); "
        "drop_last=True is no fix: it would lose {would_lose} items every epoch.",
    ),
    "iterable.batch_of_1": Spec(
        "warning",
        "stream",
        "one epoch of the stream gave {ones} batch(es) of 1 item (batch sizes "
        "{sizes}; items per worker {per_worker}): BatchNorm raises 'Expected more than 1 value per "
        "channel when training' on it.",
        "drop_last=True drops every worker's partial batch: {would_lose} item(s) per epoch here; to lose "
        "fewer, shard in blocks of batch_size items (worker k takes blocks k, k + num_workers, ...).",
    ),
    "iterable.wrong_length": Spec(
        "warning",
        "stream",
        "len(dataset) says {reported} but one epoch delivered {delivered} items: "
        "len(loader), a progress bar or a learning-rate schedule sized by it is off by {off}.",
        "Make __len__ count what one epoch delivers over all workers (the whole stream, not one worker's "
        "share), or drop __len__.",
    ),
    "random.duplicate_across_workers": Spec(
        "error",
        "random",
        "the samples are random ({random}/{indices} differ when fetched twice in one "
        "process) but the same index fetched in 2 workers drew the same random value(s) ({values} per "
        "sample) in {pairs}/{pairs} pairs: every worker draws from a copy of the same generator.",
        "Keep a seed in the Dataset, never a generator: build the generator lazily in the worker from "
        "get_worker_info().seed combined with your seed, and rebuild it when that seed changes "
        "(docs/snippets/worker_seeding.py).",
    ),
    "random.repeats_across_epochs": Spec(
        "warning",
        "random",
        "epoch 2 drew the same random value(s) as epoch 1 ({values} per sample) in "
        "{compared}/{compared} fetches: each epoch's workers start from the same generator state.",
        "Build the generator in the worker from get_worker_info().seed (new every epoch) combined with "
        "the Dataset's own seed, never from a fixed number or worker_id (docs/snippets/worker_seeding.py).",
    ),
    "persistent.stale_state": Spec(
        "error",
        "persistent",
        "after the epoch change this process's dataset has new {stale} but the "
        "persistent workers still read the old value(s) in {rows}/{rows} fetches.",
        "Send per-epoch values with the index (a sampler yielding (index, epoch)) or keep them in a "
        "shared-memory tensor; or drop persistent_workers.",
    ),
    "distributed.no_set_epoch": Spec(
        "info",
        "samplers",
        "two epochs of the DistributedSampler gave the same {indices} indices in the "
        "same order: unless your training loop calls set_epoch, every epoch repeats the first shuffle "
        "(the doctor cannot see the loop).",
        "Call loader.sampler.set_epoch(epoch) at the start of every epoch; to have the doctor check your "
        "loop's call, pass it as between_epochs (--between-epochs module:function).",
    ),
    "distributed.padding": Spec(
        "warning",
        "samplers",
        "{samples} samples on {replicas} ranks: the DistributedSampler pads the "
        "shards with {repeats} repeated sample(s) so that each rank gets {per_rank}; an evaluation counts "
        "them twice.",
        "For evaluation shard without padding (indices[rank::num_replicas]) or count each sample once; for "
        "training the repeats are harmless.",
    ),
    "distributed.drops": Spec(
        "warning",
        "samplers",
        "{samples} samples on {replicas} ranks with drop_last=True: every epoch drops "
        "{dropped} sample(s) so that each rank gets {per_rank}.",
        "Keep drop_last=False (the shards are padded instead), or shard without padding "
        "(indices[rank::num_replicas]).",
    ),
    "sampler.weights_length": Spec(
        "error",
        "coverage",
        "the WeightedRandomSampler holds {weights} weights for a dataset of {samples} "
        "samples: one epoch draws {distinct} distinct indices, {effect}.",
        "Give one weight per sample (len(weights) == len(dataset)): from class weights, index them by each "
        "sample's label, weights = class_weights[labels].",
    ),
    "sampler.weighted_mix": Spec(
        "warning",
        "samplers",
        "the WeightedRandomSampler's weights give an expected class mix of {mix} per "
        "epoch (the labels alone: {plain}).",
        "To balance the classes weight each sample by 1 / (count of its class); to keep the mix, ignore this "
        "note.",
    ),
    "memory.python_container": Spec(
        "warning",
        "containers",
        "{name} is a Python container of {items:,} objects (~{mb:.0f} MB): with "
        "fork each worker's reads write their reference counts and copy the pages; with spawn each worker "
        "unpickles a copy.",
        "Store it as one NumPy array or tensor (strings: one byte buffer plus offsets).",
    ),
    "memory.worker_growth": Spec(
        "warning",
        "speed",
        "a worker's private memory (USS) grew by {mb:.0f} MB while it fetched {batches} "
        "batches, without being asked to store anything.",
        "Look for Python lists/dicts read by __getitem__ (copy-on-write) or caches filled in workers.",
    ),
    "speed.more_workers": Spec(
        "warning",
        "speed",
        "num_workers={best} delivers {speedup}x the samples/s of your num_workers={workers} ({how}).",
        "{advice}",
    ),
    "speed.workers_slower": Spec(
        "info",
        "speed",
        "num_workers={best} delivered {best_rate:.0f} samples/s against {rate:.0f} with "
        "your num_workers={workers} ({speedup}x, {how}): each batch costs less to make than to send "
        "between processes.",
        "For data already in memory use num_workers=0 and fetch whole batches (__getitems__); with a "
        "training step per batch the difference often vanishes (measure with step_s).",
    ),
    "speed.workers_over_cores": Spec(
        "warning",
        "speed",
        "num_workers={workers} on {cores} usable CPU cores delivers {ratio}x the "
        "samples/s of num_workers={best} ({how}); {verdict}.",
        "{advice}",
    ),
    "torch.worker_count": Spec(
        "info",
        "any",
        "torch warned: {text}",
        "torch counts the CPU affinity only; the doctor's speed probe measures whether the extra workers "
        "pay off (speed.workers_over_cores).",
    ),
    "torch.iterable_length": Spec(
        "warning",
        "any",
        "torch warned: {text}",
        "An IterableDataset's __len__ must count what one epoch delivers over all workers: shard the stream "
        "with get_worker_info(), or drop __len__.",
    ),
    "torch.pin_memory": Spec(
        "info",
        "any",
        "torch warned: {text}",
        "pin_memory=True helps only host-to-accelerator copies; without an accelerator it does nothing.",
    ),
    "loader.warning": Spec(
        "warning",
        "any",
        "{category} raised {times} time(s) while probing (first: {where}): {text}",
        "Run one epoch with num_workers=0 under python -W error to see the line that warns.",
    ),
}
PROBES = tuple(
    (
        "pickling samples collate coverage stream batches random persistent samplers containers threads speed"
    ).split()
)


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
    return Finding(
        severity or spec.severity, code, spec.message.format(**figures), spec.fix.format(**figures), figures
    )
