"""Tests for loaderlab.distributed: shard counts and a free port; notebook 10's script
(notebooks/lesson10_ddp.py) launched by torchrun under loaderlab.bounded.run_bounded."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from loaderlab.bounded import run_bounded
from loaderlab.distributed import free_port, rank_shards
from loaderlab.streaming import coverage


def _flat(shards):
    return [i for shard in shards for i in shard]


def test_padding_repeats_samples_when_n_does_not_divide():
    shards = rank_shards(10, num_replicas=4, shuffle=False)
    assert [len(s) for s in shards] == [3, 3, 3, 3]
    cov = coverage(_flat(shards), 10)
    assert cov.delivered == 12 and cov.duplicates == 2 and cov.missing == 0


def test_drop_last_loses_samples():
    cov = coverage(_flat(rank_shards(10, num_replicas=4, drop_last=True)), 10)
    assert cov.delivered == 8 and cov.missing == 2 and cov.duplicates == 0


def test_divisible_n_gives_disjoint_complete_shards():
    assert coverage(_flat(rank_shards(12, num_replicas=4)), 12).exactly_once


def test_order_repeats_without_set_epoch_and_changes_with_it():
    assert rank_shards(20, 2, epoch=0) == rank_shards(20, 2, epoch=0)
    assert rank_shards(20, 2, epoch=0) != rank_shards(20, 2, epoch=1)


def test_free_port_can_be_bound_and_is_not_always_the_same():
    import socket

    ports = {free_port() for _ in range(5)}
    assert len(ports) > 1  # the OS picks an ephemeral port each time, not a constant
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports.pop()))  # raises if the port were taken or invalid


NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@pytest.mark.course
def test_notebook_10s_script_under_torchrun_shards_every_epoch_exactly_once(tmp_path):
    out = tmp_path / "seen.json"
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        "--master_addr=127.0.0.1",
        f"--master_port={free_port()}",
        str(NOTEBOOKS / "lesson10_ddp.py"),
        "--out",
        str(out),
        "--size",
        "10",
        "--num-workers",
        "1",
    ]
    run = run_bounded(argv, bound_s=120).report()
    assert run.returncode == 0 and not run.timed_out, run.output[-2000:]
    assert sorted(line for line in run.output.splitlines() if line.startswith("rank ")) == [
        "rank 0/2: epoch 0: 5 items, epoch 1: 5 items",
        "rank 1/2: epoch 0: 5 items, epoch 1: 5 items",
    ]
    seen = json.loads(out.read_text())
    for epoch, per_rank in enumerate(seen):
        assert per_rank == rank_shards(10, 2, epoch=epoch, shuffle=True, seed=0)
    assert seen[0] != seen[1]  # set_epoch reshuffled
