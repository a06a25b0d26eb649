"""The doctor's probes: each looks for one pitfall's signature on copies of the user's loader.

``Doctor.why_not(probe)`` alone decides whether a probe runs. Probes that fetch samples use
``Doctor.work``, a loader over pickled copies (``workers.copied``): the user's objects never change.
"""

from __future__ import annotations

from torch.utils.data.distributed import DistributedSampler
from torch.utils.data.sampler import WeightedRandomSampler

from loaderlab.doctor.probe_base import NO_WORKERS, samplers_of
from loaderlab.doctor.probes_data import DataProbes
from loaderlab.doctor.probes_samples import SampleProbes
from loaderlab.doctor.probes_sampling import SamplingProbes
from loaderlab.doctor.probes_speed import SpeedProbes
from loaderlab.doctor.probes_workers import WorkerProbes


class Doctor(DataProbes, SampleProbes, SamplingProbes, WorkerProbes, SpeedProbes):
    """The probes of one ``doctor(...)`` call; ``work`` is the loader over the copies (or None)."""

    def why_not(self, probe: str) -> tuple[str, str] | None:
        """Return None when ``probe`` runs now, else ("n/a", why: nothing to look at) or
        ("skipped", why: something to look at that could not be probed)."""
        loader, kinds = self.loader, {type(s) for s in samplers_of(self.loader)}
        not_applicable = {
            "stream": not self.iterable and "not an IterableDataset",
            "batches": self.iterable and "an IterableDataset (the stream probe counts its batches)",
            "random": not self.n and "no indexable samples",
            "coverage": not self.n and "no sampler (an IterableDataset) or no indexable samples",
            "persistent": not (loader.persistent_workers and loader.num_workers and self.n)
            and "no persistent workers over indexable samples",
            "samplers": not any(issubclass(k, (DistributedSampler, WeightedRandomSampler)) for k in kinds)
            and "no DistributedSampler or WeightedRandomSampler",
            "collate": (loader.batch_size is None or not (self.iterable or self.n))
            and "no automatic batching",
            "samples": not (self.iterable or self.n) and "no indexable samples",
            "threads": (not loader.num_workers and "no workers (threads in this process are yours to set)")
            or (self.iterable and "an IterableDataset")
            or (not self.n and "no indexable samples"),
        }.get(probe)
        if not_applicable:
            return "n/a", not_applicable
        if not self.copied and probe not in ("pickling", "containers"):
            return "skipped", f"the dataset {self.copy_problem}"
        if (
            self.key_problem
            and probe in ("samples", "collate", "random", "persistent", "threads")
            and not (probe == "collate" and self.iterable)
        ):
            return "skipped", self.key_problem
        if not self.workers_ok and probe in ("stream", "random", "persistent", "threads", "speed"):
            return "skipped", "workers cannot start"
        if not self.batches_ok and probe in ("stream", "speed"):
            return "skipped", "batches cannot be collated"
        if self.left() <= 0 and probe not in NO_WORKERS:
            return "skipped", "time budget spent"
        if probe in ("stream", "random", "persistent", "threads") and self.left() <= self.startup_s:
            return "skipped", f"time budget too short for another worker start-up ({self.startup_s:.1f} s)"
        return None
