"""Lab 24 checker: every worker's BLAS and OpenMP pools run one thread."""

from __future__ import annotations

import os

import pytest
import torch
from threadpoolctl import threadpool_limits

from loaderlab.checks import lab24 as threads
from loaderlab.checks.lab24 import check_one_thread_workers
from loaderlab.labs import lab24 as lab

pytestmark = [
    pytest.mark.usefixtures("no_leaked_workers"),
    pytest.mark.skipif(not hasattr(os, "fork"), reason="the lab forks its workers"),
]


def _verdict(capsys, candidate) -> str:
    ok = check_one_thread_workers(candidate)
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1 and "Traceback" not in out, out
    assert ok == out.startswith("✅")
    return out


def every_pool(worker_id):
    """The solution's answer."""
    threadpool_limits(limits=1)


def blas_only(worker_id):
    """Correct, differently: torch has already set OpenMP to one thread in a worker."""
    threadpool_limits(limits=1, user_api="blas")


def in_a_with_block(worker_id):
    with threadpool_limits(limits=1):
        pass  # the threads come back when the block ends


def environment(worker_id):
    os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = "1"


def torch_only(worker_id):
    torch.set_num_threads(1)


@pytest.mark.parametrize("candidate", [every_pool, blas_only], ids=["every-pool", "blas-only"])
def test_correct_answers_pass(capsys, candidate):
    assert _verdict(capsys, candidate).startswith("✅ each of the 2 workers runs BLAS and OpenMP on one")


@pytest.mark.parametrize(
    ("candidate", "sentence"),
    [
        (lab.no_init, "NumPy's BLAS still runs 2 threads in each worker (torch.set_num_threads"),
        (torch_only, "torch.set_num_threads limits only torch's own pool"),
        (in_a_with_block, "a `with threadpool_limits(...)` block gives the threads back"),
        (environment, "an environment variable set in a running worker comes too late"),
        (lambda worker_id: 1 / 0, "your code raised ZeroDivisionError"),
        (lambda: None, "your code raised TypeError"),
    ],
    ids=["nothing", "torch-only", "with-block", "environment", "raises", "no-worker-id"],
)
def test_wrong_answers_fail_with_their_own_sentence(capsys, candidate, sentence):
    out = _verdict(capsys, candidate)
    assert out.startswith("❌") and sentence in out, out


def test_workers_inherit_blas_threads_that_torch_does_not_limit():
    """What the lab is about: torch sets its own pool to 1 in a worker, not NumPy's BLAS."""
    workers = lab.worker_pools(lab.no_init)
    assert [w["torch"] for w in workers] == [1, 1]
    assert all(max(w["blas"]) == lab.MAIN_THREADS for w in workers)


def test_stub_and_nothing_are_not_attempted(capsys):
    def stub(worker_id):
        raise NotImplementedError("your code here")

    assert _verdict(capsys, stub).startswith("⏳ not attempted yet")
    assert _verdict(capsys, None).startswith("⏳ not attempted yet")


def test_says_when_a_worker_has_no_threads_to_limit(capsys, monkeypatch):
    monkeypatch.setattr(threads, "worker_pools", lambda init: [{"blas": [1], "openmp": [1], "env": {}}] * 2)
    out = _verdict(capsys, every_pool)
    assert out.startswith("⏳ not checkable here: a worker's BLAS starts with one thread"), out
