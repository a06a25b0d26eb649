"""Probes of what one epoch delivers: batch sizes, the sampler's indices, streams, samplers."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from typing import Any

import torch
from torch.utils.data import BatchSampler, SequentialSampler
from torch.utils.data.distributed import DistributedSampler
from torch.utils.data.sampler import WeightedRandomSampler

from loaderlab.doctor.probe_base import MAX_DRAWS, ProbeBase, as_index, hashable, length_of, samplers_of
from loaderlab.doctor.workers import (
    ProbeIterable,
    fingerprint,
    identity,
)
from loaderlab.loaders import rebuild
from loaderlab.measure import Pass, timed_batches


class SamplingProbes(ProbeBase):
    """batches, stream, coverage, samplers."""

    # -- map-style batch sizes -------------------------------------------------------------
    def batches(self) -> None:
        bs = self.work.batch_sampler
        if bs is None:
            return
        if type(bs) is BatchSampler:
            n, size, total = len(bs.sampler), bs.batch_size, len(bs)
            ones = 1 if (n % size == 1 and not bs.drop_last and size > 1) else 0
        else:  # a custom batch sampler (the copy): count what one epoch yields
            sizes = [len(b) for b in itertools.islice(iter(bs), 100_000)]
            ones = sum(s == 1 for s in sizes) if max(sizes, default=0) > 1 else 0
            total, n, size = len(sizes), sum(sizes), max(sizes, default=0)
        self.figures["batches"] = {"batches": total, "samples": n, "batch_size": size, "batches_of_1": ones}
        if ones:
            self.add("batch.last_size_1", samples=n, batch_size=size)
        dropped = n % size if type(bs) is BatchSampler and bs.drop_last and size else 0
        if dropped and type(bs.sampler) is SequentialSampler:  # the same ones every epoch
            self.figures["batches"]["dropped_every_epoch"] = dropped
            self.add(
                "batch.dropped_every_epoch",
                dropped=dropped,
                samples=n,
                share=dropped / n,
                first=n - dropped,
                last=n - 1,
            )

    # -- streams: items an epoch delivers against items the stream holds ------------------------
    def stream(self) -> None:
        loader, share = self.loader, max(1.0, self.left() / 3)
        held: Counter[str] = Counter()
        deadline = time.perf_counter() + share
        for count, item in enumerate(self.dataset, 1):  # here get_worker_info() is None: the whole stream
            held[fingerprint(item)] += 1
            if time.perf_counter() > deadline or count >= 100_000:
                self.figures["stream"] = {"counted": False, "held_at_least": count}
                return
        delivered, per_worker, sizes, run, order = self._epoch(share)
        if not run.finished:
            self.figures["stream"] = {"counted": False, "delivered_at_least": sum(sizes)}
            return
        again = None  # the items lost in a second epoch: the same ones, or others?
        lost = held - delivered
        if lost and loader.drop_last and self.left() > self.startup_s + share / 2:
            second = self._epoch(share)
            if second[3].finished:  # the same items only if the stream came in the same order too
                again = held - second[0] if second[4] == order else Counter({"another order": 1})
        self._stream_findings(held, delivered, sizes, per_worker, lost, again)

    def _epoch(self, seconds: float) -> tuple[Counter[str], Counter[int], list[int], Pass, list[str]]:
        """Run one epoch of the stream with the loader's settings; return the items delivered (by
        fingerprint), the items per worker, the batch sizes, the timed pass and the order."""
        probe = rebuild(
            self.work, dataset=ProbeIterable(self.dataset), collate_fn=identity, persistent_workers=False
        )
        try:
            len(probe)  # as a loop showing progress does: torch then checks the count against __len__
        except TypeError:
            pass
        delivered: Counter[str] = Counter()
        per_worker: Counter[int] = Counter()  # items each worker delivered (a batch comes from one worker)
        sizes, run, order = [], Pass(), []
        for batch in timed_batches(probe, run, seconds=seconds, kill=True):
            items = batch if self.loader.batch_size is not None else [batch]
            sizes.append(len(items))
            delivered.update(fp for _, fp in items)
            order += [fp for _, fp in items]
            per_worker[items[0][0] if items else -1] += len(items)
        self.started(run.first_batch_s if self.loader.num_workers and run.batches else 0.0)
        return delivered, per_worker, sizes, run, order

    def _stream_findings(
        self,
        held: Counter[str],
        delivered: Counter[str],
        sizes: list[int],
        per_worker: Counter[int],
        lost_items: Counter[str] | None = None,
        lost_again: Counter[str] | None = None,
    ) -> None:
        loader, size = self.loader, self.loader.batch_size or 1
        n_held, n_delivered = sum(held.values()), sum(delivered.values())
        extra = sum(max(0, c - held[fp]) for fp, c in delivered.items() if fp in held)
        lost = max(0, n_held - (n_delivered - extra))
        partial = sorted(s for s in sizes if s < size)
        ones = sum(s == 1 for s in sizes) if size > 1 else 0
        workers = max(1, loader.num_workers)
        self.figures["stream"] = {
            "counted": True,
            "held": n_held,
            "delivered": n_delivered,
            "duplicated": extra,
            "lost": lost,
            "batches": len(sizes),
            "batch_sizes": dict(sorted(Counter(sizes).items())),
            "batches_of_1": ones,
            "partial_batches": partial,
            "items_per_worker": {str(k): v for k, v in sorted(per_worker.items())},
        }
        if extra:
            self.stream_duplicates = True
            self.add("iterable.duplicates", delivered=n_delivered, held=n_held, extra=extra, workers=workers)
        if lost:
            why, severity = "the workers' shards leave them out", None
            advice = (
                "Keep drop_last=False and shard the stream in blocks of batch_size items (worker k "
                "takes blocks k, k + num_workers, ...): only the epoch's last batch is then partial."
            )
            which = "the same ones every epoch: the stream is read in the same order"
            if loader.drop_last:
                why = f"drop_last=True drops the partial batch of each of the {workers} worker(s)"
                severity = "warning"
                if lost_again is None:
                    which = "whether the same items are lost every epoch was not measured (time budget)"
                elif lost_again != lost_items:
                    which = "different items each epoch, as drop_last loses on a shuffled loader"
                    if lost / n_held <= 0.05:
                        severity = "info"
                        advice = "Nothing to fix: few items sit out, and different ones each epoch."
                else:
                    which = "the same items every epoch: they never reach training"
            self.figures["stream"]["same_lost_every_epoch"] = (
                None if lost_again is None else lost_again == lost_items
            )
            self.add(
                "iterable.lost_items",
                severity,
                delivered=n_delivered - extra,
                held=n_held,
                lost=lost,
                share=lost / n_held,
                why=why,
                which=which,
                advice=advice,
            )
        elif len(partial) > 1:
            self.add(
                "iterable.partial_batches",
                count=len(partial),
                sizes=partial,
                workers=workers,
                would_lose=sum(partial),
            )
        reported = length_of(self.dataset)
        self.figures["stream"]["reported_len"] = reported
        if reported is not None and reported != n_delivered and not (extra or lost):
            self.add(
                "iterable.wrong_length",
                reported=reported,
                delivered=n_delivered,
                off=abs(reported - n_delivered),
            )
        if ones:
            tails = {k: v % size for k, v in sorted(per_worker.items())}
            self.add(
                "iterable.batch_of_1",
                ones=ones,
                sizes=dict(sorted(Counter(sizes).items())),
                per_worker=", ".join(str(v) for _, v in sorted(per_worker.items())),
                would_lose=sum(tails.values()),
                tails=tails,
            )

    # -- the sampler alone: which indices one epoch draws (no sample is read) -------------------
    def coverage(self) -> None:
        work, n = self.work, self.n
        if not n:  # why_not runs this probe over indexable samples only
            return
        source = work.batch_sampler if work.batch_sampler is not None else work.sampler
        seen: set[Any] = set()
        drawn = outside = 0
        deadline = time.perf_counter() + max(0.5, min(2.0, self.left() / 10))
        complete, nested = True, None  # nested: the first key that is itself a list (batches of batches)
        for item in source:
            batch = isinstance(item, (list, tuple)) and work.batch_sampler is not None
            for key in item if batch else [item]:
                if work.batch_size is not None and isinstance(key, list):
                    nested = nested if nested is not None else key
                for index in key if isinstance(key, list) and work.batch_size is not None else [key]:
                    drawn += 1
                    seen.add(hashable(index))
                    i = as_index(index)
                    outside += i is not None and not 0 <= i < n
            if drawn >= MAX_DRAWS or time.perf_counter() > deadline:
                complete = False
                break
        self.figures["coverage"] = {
            "samples": n,
            "drawn": drawn,
            "distinct": len(seen),
            "share": round(len(seen) / n, 3),
            "outside": outside,
            "whole_epoch": complete,
        }
        if nested is not None:
            first = [hashable(k) for k in nested[:4]] + (["..."] if len(nested) > 4 else [])
            self.add(
                "sampler.yields_batches", kind=type(nested).__name__, first=first, batch_size=work.batch_size
            )
        weighted = next((s for s in samplers_of(work) if isinstance(s, WeightedRandomSampler)), None)
        if weighted is None or len(weighted.weights) == n:
            return
        k = len(weighted.weights)
        effect = (
            f"all below {k}: samples {k} to {n - 1} are never drawn"
            if k < n
            else f"{outside} of the {drawn} draws beyond the last index ({n - 1}), where fetching fails"
        )
        self.add("sampler.weights_length", weights=k, samples=n, distinct=len(seen), effect=effect)

    # -- samplers: DistributedSampler epochs, padding and drops; WeightedRandomSampler mix -------
    def samplers(self) -> None:
        found = samplers_of(self.work)
        dist = next((s for s in found if isinstance(s, DistributedSampler)), None)
        if dist is not None:
            orders = []
            for epoch in range(2):
                orders.append(list(iter(dist)))
                self._hook(self.work, epoch + 1)
            same, n = orders[0] == orders[1], len(dist.dataset)
            extra, shard = dist.total_size - n, {"samples": n, "replicas": dist.num_replicas}
            self.figures["distributed"] = {
                "shuffle": dist.shuffle,
                "same_order": same,
                "indices": len(orders[0]),
                **shard,
                "padded": max(0, extra),
                "dropped": max(0, -extra),
            }
            if dist.shuffle and same and len(orders[0]) > 1:
                self.add("distributed.no_set_epoch", indices=len(orders[0]))
            if extra > 0:
                self.add("distributed.padding", **shard, repeats=extra, per_rank=dist.num_samples)
            elif extra < 0:
                self.add("distributed.drops", **shard, dropped=-extra, per_rank=dist.num_samples)
        weighted = next((s for s in found if isinstance(s, WeightedRandomSampler)), None)
        if weighted is None:
            return
        weights = weighted.weights.double()
        attrs: list[Any] = [getattr(self.dataset, a, None) for a in ("targets", "labels")]
        labels = next((v for v in attrs if hasattr(v, "__len__") and len(v) == len(weights)), None)
        if labels is None:
            self.figures["weighted"] = {"labels": "not reachable (no dataset.targets or dataset.labels)"}
            return
        labels = list(labels.tolist() if hasattr(labels, "tolist") else labels)
        classes = sorted(set(labels), key=repr)
        position = {c: i for i, c in enumerate(classes)}
        index = torch.tensor([position[y] for y in labels])
        mix = torch.zeros(len(classes), dtype=torch.float64).index_add_(0, index, weights) / weights.sum()
        plain = torch.bincount(index, minlength=len(classes)).double() / len(labels)
        shares = [
            {str(c): round(float(p), 3) for c, p in zip(classes, ps, strict=True)} for ps in (mix, plain)
        ]
        self.figures["weighted"] = {"expected_mix": shares[0], "label_mix": shares[1]}
        text = [", ".join(f"{c}: {p:.0%}" for c, p in share.items()) for share in shares]
        balanced = len(classes) < 2 or float(mix.max()) < 2 * float(mix.min())
        self.add(
            "sampler.weighted_mix",
            "info" if balanced else None,
            mix=text[0],
            plain=text[1],
            expected_mix=shares[0],
        )
