"""Notebooks 23-25's snippets: loader_budget_mb adds up a loader's peak from its settings
(memory_budget.py); one_thread_per_worker leaves each worker one BLAS thread
(threads_in_workers.py); common_batches gives every rank the smallest batch count, and
init_bounded a timeout (uneven_shards.py), in a real 2-process gloo group."""

from __future__ import annotations

import datetime
import multiprocessing
import os
import socket

import pytest
from course_code import snippet
from torch.utils.data import DataLoader


def test_loader_budget_adds_up_each_term():
    budget = snippet("memory_budget").loader_budget_mb
    # main 100 + 2 workers x (30 start + 50 growth) + 2 x 2 batches in flight x 10 + 10 held
    assert budget(100, 50, 10, num_workers=2) == 100 + 2 * 80 + 40 + 10
    assert budget(100, 50, 10, num_workers=2, pin_memory=True) == 310 + (2 * 2 + 1) * 10
    assert budget(100, 50, 10, num_workers=0) == 160
    assert budget(100, 50, 10, num_workers=0, pin_memory=True) == 170
    baseline = budget(2000, 500, 36.75, num_workers=8)
    assert round(baseline) == 6865  # the snippet's own example (docs/answers.md, notebook 23)
    halved = (baseline - 2000 + 36.75) / 2  # 4 workers: half of what 8 add, with one batch held
    assert budget(2000, 500, 36.75, num_workers=4) - 2000 == pytest.approx(halved, abs=0.01)


def _blas_threads(indices):
    from threadpoolctl import threadpool_info

    return max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")


@pytest.mark.usefixtures("no_leaked_workers")
def test_one_thread_per_worker_limits_blas_in_workers_only():
    from threadpoolctl import threadpool_info, threadpool_limits

    one_thread = snippet("threads_in_workers").one_thread_per_worker
    with threadpool_limits(limits=2, user_api="blas"):  # something to limit, even on 1 core
        context = "fork" if hasattr(os, "fork") else None
        plain = list(
            DataLoader(
                range(2),
                batch_size=1,
                num_workers=2,
                collate_fn=_blas_threads,
                multiprocessing_context=context,
            )
        )
        limited = list(
            DataLoader(
                range(2),
                batch_size=1,
                num_workers=2,
                collate_fn=_blas_threads,
                worker_init_fn=one_thread,
                multiprocessing_context=context,
            )
        )
        main = max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")
    if context == "fork":
        assert plain == [2, 2]
    assert limited == [1, 1] and main == 2


def _rank(rank: int, port: int, sizes: list[int], out) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2")
    uneven = snippet("uneven_shards")
    uneven.init_bounded("gloo")
    import torch.distributed as dist

    loader = DataLoader(range(sizes[rank]), batch_size=4)
    out.put((rank, len(loader), sum(1 for _ in uneven.common_batches(loader))))
    dist.destroy_process_group()


@pytest.mark.course
@pytest.mark.skipif(not hasattr(os, "fork"), reason="two forked ranks")
def test_common_batches_gives_every_rank_the_smallest_count():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    ranks = [ctx.Process(target=_rank, args=(r, port, [21, 20], out)) for r in range(2)]
    for p in ranks:
        p.start()
    try:
        results = sorted(out.get(timeout=60) for _ in ranks)
    finally:
        for p in ranks:
            p.join(10)
            if p.is_alive():
                p.kill()
    assert results == [(0, 6, 5), (1, 5, 5)]  # 21 and 20 samples: 6 and 5 batches, both run 5


def test_init_bounded_gives_the_group_a_timeout(monkeypatch):
    import torch.distributed as dist

    calls = []
    monkeypatch.setattr(dist, "init_process_group", lambda *args, **kwargs: calls.append((args, kwargs)))
    snippet("uneven_shards").init_bounded("gloo")
    assert calls == [(("gloo",), {"timeout": datetime.timedelta(minutes=5)})]
