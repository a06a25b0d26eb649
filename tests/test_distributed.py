"""Tests for loaderlab.distributed: shard counts, evaluation without padding, a real torchrun;
run_bounded and notebook 10's script (notebooks/lesson10_ddp.py) launched with it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from loaderlab.distributed import (
    UnpaddedDistributedSampler,
    deduplicated_accuracy,
    free_port,
    main,
    rank_shards,
    run_bounded,
    run_torchrun,
    torchrun_argv,
)
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


@pytest.mark.parametrize("n,world", [(10, 4), (7, 3), (12, 4), (2, 4)])
def test_unpadded_sampler_exactly_once(n, world):
    shards = rank_shards(n, world, sampler_cls=UnpaddedDistributedSampler, shuffle=True)
    assert coverage(_flat(shards), n).exactly_once
    lengths = [len(UnpaddedDistributedSampler(range(n), world, r)) for r in range(world)]
    assert lengths == [len(s) for s in shards]


def test_unpadded_sampler_matches_distributed_sampler_when_divisible():
    ours = rank_shards(12, 3, sampler_cls=UnpaddedDistributedSampler, shuffle=True, epoch=2)
    assert ours == rank_shards(12, 3, shuffle=True, epoch=2)


def test_unpadded_sampler_validates():
    with pytest.raises(ValueError, match="rank"):
        UnpaddedDistributedSampler(range(5), num_replicas=2, rank=2)
    with pytest.raises(TypeError, match="dataset_or_n"):
        UnpaddedDistributedSampler(object(), num_replicas=2, rank=0)


def test_deduplicated_accuracy_counts_each_index_once():
    pairs = [(0, True), (1, False), (2, True), (0, True), (0, True)]
    assert deduplicated_accuracy(pairs) == (2 / 3, 3)
    with pytest.raises(ValueError, match="both"):
        deduplicated_accuracy([(0, True), (0, False)])
    with pytest.raises(ValueError, match="empty"):
        deduplicated_accuracy([])


def test_torchrun_argv_single_and_multi_node():
    argv = torchrun_argv(["--size", "8"], 2, master_port=1234, python="python")
    assert argv[:3] == ["python", "-m", "torch.distributed.run"]
    assert "--master_addr=127.0.0.1" in argv and "--master_port=1234" in argv
    assert argv[-4:] == ["-m", "loaderlab.distributed", "--size", "8"]
    multi = torchrun_argv([], 2, nnodes=2, rdzv_endpoint="node0:29400", python="python")
    assert "--rdzv_backend=c10d" in multi and "--rdzv_endpoint=node0:29400" in multi
    with pytest.raises(ValueError, match="rdzv_endpoint"):
        torchrun_argv([], 2, nnodes=2)
    with pytest.raises(ValueError, match="master_port"):
        torchrun_argv([], 2)


def test_free_port_is_a_port():
    assert 0 < free_port() < 65536


def test_script_rejects_bad_arguments():
    with pytest.raises(SystemExit):
        main(["--out", "x.json", "--size", "0"])
    with pytest.raises(SystemExit):
        main(["--out", "x.json", "--mode", "graph"])


@pytest.mark.parametrize("mode,workers", [("map", 0), ("iterable", 2)])
def test_real_torchrun_covers_every_item_exactly_once(tmp_path, mode, workers):
    n = 42
    run = run_torchrun(
        ["--size", str(n), "--mode", mode, "--num-workers", str(workers)],
        tmp_path / "result.json", timeout_s=120,
    )
    assert run.returncode == 0 and not run.timed_out, run.output[-2000:]
    assert len(run.lines) == 2 and run.lines[0].startswith("[loaderlab] rank 0/2")
    epochs = run.result["epochs"]
    assert len(epochs) == 2 and all(len(per_rank) == 2 for per_rank in epochs)
    for per_rank in epochs:
        assert coverage(_flat(per_rank), n).exactly_once
    # 21 items per rank in batches of 4; iterable: 2 workers with 11 or 10 items, 3 batches each
    assert run.result["batches"] == [[6, 6], [6, 6]]
    if mode == "map":
        assert epochs[0] != epochs[1]  # set_epoch reshuffled


def test_timeout_kills_launcher_ranks_and_workers(tmp_path):
    import psutil

    out = tmp_path / "hung.json"
    run = run_torchrun(
        ["--size", "8", "--num-workers", "1", "--hang-s", "300"], out, timeout_s=10
    )
    assert run.timed_out and run.returncode != 0 and run.result is None
    assert run.lines[-1].startswith("[loaderlab] killed after the 10 s timeout")
    left = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if str(out) in " ".join(proc.info["cmdline"] or []):
                left.append(proc)
        except psutil.Error:
            continue
    assert left == [], f"{len(left)} processes of the launch are still alive"


NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def test_run_bounded_returns_the_output_and_kills_what_outlives_the_bound():
    done = run_bounded([sys.executable, "-c", "print('hi')"], timeout_s=30)
    assert (done.returncode, done.output.strip(), done.timed_out) == (0, "hi", False)
    hung = run_bounded([sys.executable, "-c", "import time; time.sleep(300)"], timeout_s=1)
    assert hung.timed_out and hung.returncode != 0 and hung.wall_s < 30
    with pytest.raises(ValueError):
        run_bounded(["true"], timeout_s=0)


def test_notebook_10s_script_under_torchrun_shards_every_epoch_exactly_once(tmp_path):
    out = tmp_path / "seen.json"
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
            "--master_addr=127.0.0.1", f"--master_port={free_port()}",
            str(NOTEBOOKS / "lesson10_ddp.py"), "--out", str(out), "--size", "10", "--num-workers", "1"]
    run = run_bounded(argv, timeout_s=120)
    assert run.returncode == 0 and not run.timed_out, run.output[-2000:]
    assert sorted(line for line in run.output.splitlines() if line.startswith("rank ")) == [
        "rank 0/2: epoch 0: 5 items, epoch 1: 5 items", "rank 1/2: epoch 0: 5 items, epoch 1: 5 items"]
    seen = json.loads(out.read_text())
    for epoch, per_rank in enumerate(seen):
        assert per_rank == rank_shards(10, 2, epoch=epoch, shuffle=True, seed=0)
    assert seen[0] != seen[1]  # set_epoch reshuffled
