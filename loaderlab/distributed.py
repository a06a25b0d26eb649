"""Distributed data loading: shards per rank, an evaluation sampler without padding, and a
real multi-process run launched with torchrun.

Run it yourself (CPU, gloo, two processes on this machine)::

    torchrun --nproc_per_node=2 --master_addr=127.0.0.1 --master_port=29533 \\
        -m loaderlab.distributed --out result.json --size 40 --mode map

Each rank loads its shard for ``--epochs`` epochs through a DataLoader; the ranks gather the
items they saw with ``all_gather_object``; rank 0 writes them as JSON to ``--out``; every rank
prints one line that starts with ``[loaderlab]``. The JSON holds ``epochs[e][rank]`` (the
items rank saw in epoch e, in order) and ``batches[e][rank]`` (how many batches it ran).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import torch
from torch.utils.data import DataLoader, DistributedSampler, Sampler, TensorDataset

from loaderlab.loaders import require_positive
from loaderlab.streaming import RankWorkerShardedStream, flatten_items

LINE_PREFIX = "[loaderlab]"
MODES = ("map", "iterable")


def _require_rank(rank: Any, num_replicas: int) -> int:
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise TypeError(f"rank must be an int, got {type(rank).__name__}")
    if not 0 <= rank < num_replicas:
        raise ValueError(f"rank must be in [0, num_replicas={num_replicas}), got {rank}")
    return rank


def _size(dataset_or_n: Any) -> int:
    if isinstance(dataset_or_n, int) and not isinstance(dataset_or_n, bool):
        return require_positive(dataset_or_n, "dataset_or_n")
    try:
        return len(dataset_or_n)
    except TypeError:
        raise TypeError(
            f"dataset_or_n must be an int or a sized dataset, got {type(dataset_or_n).__name__}"
        ) from None


class UnpaddedDistributedSampler(Sampler[int]):
    """Shards ``range(len(dataset))`` between ranks without padding or dropping: every index
    goes to exactly one rank (ranks differ in size by at most one).

    The permutation is ``DistributedSampler``'s (``seed + epoch``), so it is a drop-in for
    evaluation. Do not use it where every rank must run the same number of steps (training with
    DDP): the rank with fewer batches would stop early and the others would wait for it.
    """

    def __init__(
        self, dataset: Any, num_replicas: int, rank: int, shuffle: bool = False, seed: int = 0
    ) -> None:
        self.n = _size(dataset)
        self.num_replicas = require_positive(num_replicas, "num_replicas")
        self.rank = _require_rank(rank, num_replicas)
        self.shuffle, self.seed, self.epoch = bool(shuffle), seed, 0

    def set_epoch(self, epoch: int) -> None:
        """Use the permutation of ``epoch`` from the next ``iter()`` on."""
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        if self.shuffle:
            g = torch.Generator().manual_seed(self.seed + self.epoch)
            order = torch.randperm(self.n, generator=g).tolist()
        else:
            order = list(range(self.n))
        return iter(order[self.rank :: self.num_replicas])

    def __len__(self) -> int:
        return len(range(self.rank, self.n, self.num_replicas))


def rank_shards(
    dataset_or_n: Any,
    num_replicas: int,
    epoch: int = 0,
    sampler_cls: type = DistributedSampler,
    **sampler_kwargs: Any,
) -> list[list[int]]:
    """Return the indices that each rank's sampler yields in ``epoch``, one list per rank.

    Builds ``sampler_cls(dataset, num_replicas=..., rank=r, **sampler_kwargs)`` for every rank
    ``r`` (``DistributedSampler`` by default) and calls ``set_epoch(epoch)`` first.
    """
    n = _size(dataset_or_n)
    require_positive(num_replicas, "num_replicas")
    dataset = range(n)
    shards = []
    for rank in range(num_replicas):
        sampler = sampler_cls(dataset, num_replicas=num_replicas, rank=rank, **sampler_kwargs)
        sampler.set_epoch(epoch)
        shards.append([int(i) for i in sampler])
    return shards


def deduplicated_accuracy(pairs: Iterable[tuple[int, bool]]) -> tuple[float, int]:
    """Return ``(accuracy, n)`` over distinct sample indices from gathered ``(index, correct)``
    pairs: a sample that several ranks scored (padding) counts once."""
    verdicts: dict[int, bool] = {}
    for index, correct in pairs:
        index, correct = int(index), bool(correct)
        if verdicts.setdefault(index, correct) != correct:
            raise ValueError(f"index {index} was scored both correct and wrong")
    if not verdicts:
        raise ValueError("pairs must not be empty")
    return sum(verdicts.values()) / len(verdicts), len(verdicts)


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def torchrun_argv(
    script_args: Sequence[str],
    nproc_per_node: int = 2,
    master_port: int | None = None,
    nnodes: int = 1,
    rdzv_endpoint: str | None = None,
    python: str | None = None,
) -> list[str]:
    """Return the command line that runs ``python -m loaderlab.distributed script_args`` under
    torchrun: one node on 127.0.0.1:``master_port``, or ``nnodes`` machines meeting at
    ``rdzv_endpoint`` (``HOST:PORT``, c10d rendezvous)."""
    require_positive(nproc_per_node, "nproc_per_node")
    require_positive(nnodes, "nnodes")
    launcher = [python or sys.executable, "-m", "torch.distributed.run"]
    if nnodes == 1:
        if master_port is None:
            raise ValueError("master_port is required for a single-node run")
        where = ["--nnodes=1", "--master_addr=127.0.0.1", f"--master_port={master_port}"]
    else:
        if not rdzv_endpoint or ":" not in rdzv_endpoint:
            raise ValueError(f"rdzv_endpoint must be HOST:PORT, got {rdzv_endpoint!r}")
        where = [
            f"--nnodes={nnodes}", "--rdzv_backend=c10d", f"--rdzv_endpoint={rdzv_endpoint}",
            "--rdzv_id=loaderlab",
        ]
    return [
        *launcher, *where, f"--nproc_per_node={nproc_per_node}",
        "-m", "loaderlab.distributed", *script_args,
    ]


@dataclass
class TorchrunResult:
    """What a torchrun launch returned: exit code, the JSON result, our own output lines."""

    returncode: int
    result: dict[str, Any] | None
    lines: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    output: str = ""
    timed_out: bool = False


def _kill_launch(proc: subprocess.Popen) -> None:
    """Kill a torchrun launch: the launcher, its ranks and their DataLoader workers."""
    # torchrun starts every rank in a session of its own (elastic's SubprocessHandler._popen
    # uses start_new_session=True), so killing the launcher's process group misses the ranks.
    # Collect the whole family first; once the launcher dies the ranks are no longer its
    # children and could not be found.
    try:
        family = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        family = []
    proc.terminate()  # SIGTERM: torchrun closes its ranks' sessions itself
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        pass
    for member in family:
        try:
            family.extend(c for c in member.children(recursive=True) if c not in family)
            member.kill()
        except psutil.Error:
            continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    psutil.wait_procs(family, timeout=5)


@dataclass
class BoundedRun:
    """What a command run under a time bound returned: exit code, output, wall time."""

    returncode: int
    output: str
    wall_s: float
    timed_out: bool


def run_bounded(argv: Sequence[str], timeout_s: float = 60.0, env: dict[str, str] | None = None) -> BoundedRun:
    """Run ``argv`` (stdout and stderr together) and return what it printed, never waiting
    longer than ``timeout_s``.

    On timeout the command and every process it started are killed — for a torchrun launch the
    launcher, its ranks (each in a session of its own) and their DataLoader workers — so
    nothing is left behind and the caller never hangs (``timed_out`` is True).
    """
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)):
        raise TypeError(f"timeout_s must be a number of seconds, got {type(timeout_s).__name__}")
    if not 0 < timeout_s <= 600:
        raise ValueError(f"timeout_s must be in (0, 600] seconds, got {timeout_s}")
    start = time.perf_counter()
    # Not subprocess.run(timeout=...): it kills only the launcher, and the orphaned ranks keep
    # the output pipe open, so run() would then wait for them anyway.
    proc = subprocess.Popen(
        list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=dict(os.environ if env is None else env), start_new_session=True,
    )
    timed_out = False
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_launch(proc)
        output, _ = proc.communicate()
        output += f"\n{LINE_PREFIX} killed after the {timeout_s} s timeout"
    return BoundedRun(proc.returncode, output, time.perf_counter() - start, timed_out)


def run_torchrun(
    script_args: Sequence[str], out: str | Path, nproc_per_node: int = 2, timeout_s: float = 60.0
) -> TorchrunResult:
    """Return the result of ``torchrun -m loaderlab.distributed`` run with local processes.

    On timeout the launcher, every rank and their workers are killed (``timed_out`` is True),
    so nothing is left behind. ``lines`` holds only the lines the ranks printed themselves
    (prefixed ``[loaderlab]``), sorted; ``result`` is the JSON rank 0 wrote to ``out`` (None
    if it did not).
    """
    out = Path(out)
    if out.exists():
        out.unlink()
    argv = torchrun_argv(
        [*script_args, "--out", str(out)], nproc_per_node, master_port=free_port()
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    run = run_bounded(argv, timeout_s, env)
    # Split on the prefix as well as on newlines, in case two ranks' lines ran together.
    pieces = re.split(rf"(?={re.escape(LINE_PREFIX)})|\n", run.output)
    lines = sorted(p.strip() for p in pieces if p.startswith(LINE_PREFIX))
    result = json.loads(out.read_text()) if out.exists() else None
    return TorchrunResult(run.returncode, result, lines, run.wall_s, run.output, run.timed_out)


# --------------------------------------------------------------------------- the script


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m loaderlab.distributed",
        description="Load a dataset's shards on every rank and gather what each rank saw.",
    )
    parser.add_argument("--out", required=True, help="JSON file that rank 0 writes")
    parser.add_argument("--size", type=int, default=40, help="dataset size n (items 0..n-1)")
    parser.add_argument("--mode", choices=MODES, default="map",
                        help="map: DistributedSampler; iterable: RankWorkerShardedStream")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang-s", type=float, default=0.0,
                        help="sleep this long after loading, to try timeouts")
    args = parser.parse_args(argv)
    for name in ("size", "epochs", "batch_size"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be > 0")
    if args.num_workers < 0:
        parser.error("--num-workers must be >= 0")
    return args


def _loader(args: argparse.Namespace, rank: int, world_size: int) -> tuple[DataLoader, Any]:
    if args.mode == "map":
        dataset = TensorDataset(torch.arange(args.size))
        sampler = DistributedSampler(
            dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=args.seed
        )
        loader = DataLoader(
            dataset, batch_size=args.batch_size, sampler=sampler, num_workers=args.num_workers,
            persistent_workers=args.num_workers > 0,
        )
        return loader, sampler
    stream = RankWorkerShardedStream(args.size, rank, world_size, num_workers=args.num_workers)
    loader = DataLoader(
        stream, batch_size=args.batch_size, num_workers=args.num_workers,
        persistent_workers=args.num_workers > 0,
    )
    return loader, None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one rank of the gathering job (started by torchrun); return the exit status."""
    import torch.distributed as dist

    from loaderlab.env import apply_start_method

    args = _parse(argv)
    apply_start_method()  # LOADERLAB_START_METHOD=spawn reaches the ranks' workers too
    dist.init_process_group("gloo")
    try:
        rank, world_size = dist.get_rank(), dist.get_world_size()
        loader, sampler = _loader(args, rank, world_size)
        seen_per_epoch: list[list[list[int]]] = []
        batches_per_epoch: list[list[int]] = []
        for epoch in range(args.epochs):
            if sampler is not None:
                sampler.set_epoch(epoch)
            batches = list(loader)
            gathered: list[Any] = [None] * world_size
            dist.all_gather_object(gathered, (flatten_items(batches), len(batches)))
            seen_per_epoch.append([items for items, _ in gathered])
            batches_per_epoch.append([count for _, count in gathered])
        if args.hang_s > 0:
            time.sleep(args.hang_s)
        counts = ", ".join(f"epoch {e}: {len(s[rank])} items" for e, s in enumerate(seen_per_epoch))
        # One write per line: two ranks share the launcher's stdout, and print() writes the
        # text and the newline separately, so their lines could interleave.
        sys.stdout.write(f"{LINE_PREFIX} rank {rank}/{world_size} ({args.mode}, "
                         f"{args.num_workers} workers): {counts}\n")
        sys.stdout.flush()
        if rank == 0:
            Path(args.out).write_text(json.dumps({
                "mode": args.mode, "n": args.size, "world_size": world_size,
                "num_workers": args.num_workers, "batch_size": args.batch_size,
                "epochs": seen_per_epoch, "batches": batches_per_epoch,
            }))
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
