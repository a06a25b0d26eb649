"""Notebook 12's snippets, each run in a fresh Python (a forkserver and a script's __main__
belong to a whole program): a forkserver preloaded with torch starts its workers several times
faster than a plain one, whose every worker imports torch itself; the training script with the
__main__ guard runs under spawn, and the same script without the guard fails with the
"bootstrapping phase" error."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SNIPPETS = Path(__file__).resolve().parent.parent / "docs" / "snippets"

# Two epochs of a 1-worker loader built by the snippet's forkserver_loader, with the preload
# list given on the command line; prints the seconds to the first batch of epoch 2 (epoch 1
# also starts the server, which imports the preload list).
PRELOAD_RUN = """
import runpy, sys, time
import torch
from torch.utils.data import TensorDataset
sys.modules["loaderlab"] = None
forkserver_loader = runpy.run_path(sys.argv[1])["forkserver_loader"]
loader = forkserver_loader(TensorDataset(torch.arange(8)), preload=sys.argv[2:], batch_size=4, num_workers=1)
for epoch in range(2):
    start = time.perf_counter()
    for i, batch in enumerate(loader):
        if i == 0:
            first_s = time.perf_counter() - start
print(first_s)
"""


def run_python(args: list[str], timeout_s: float = 120.0) -> subprocess.CompletedProcess:
    """Run a fresh Python in a process group of its own; the whole group is killed on timeout."""
    child = subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        pytest.fail(f"{args} did not finish within {timeout_s} s:\n{err[-2000:]}")
    return subprocess.CompletedProcess(args, child.returncode, out, err)


def epoch_2_first_batch_s(preload: list[str]) -> float:
    done = run_python(["-c", PRELOAD_RUN, str(SNIPPETS / "start_method_preload.py"), *preload])
    assert done.returncode == 0, done.stderr[-2000:]
    return float(done.stdout.split()[-1])


@pytest.mark.course
@pytest.mark.spawn  # a release check (make test-spawn): 15 s of fresh interpreters
@pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(), reason="no forkserver here")
def test_a_preloaded_forkserver_starts_workers_without_importing_torch_again():
    plain, preloaded = epoch_2_first_batch_s([]), epoch_2_first_batch_s(["torch"])
    # A plain server's worker imports torch (about a second); a preloaded server's worker
    # starts with it imported (tens of ms). One busy core slows both alike.
    assert preloaded < plain / 3, (plain, preloaded)


@pytest.mark.course
@pytest.mark.spawn  # a release check (make test-spawn): 23 s of spawned workers
def test_the_guarded_script_runs_under_spawn_and_fails_without_the_guard(tmp_path):
    guarded = SNIPPETS / "main_guard.py"
    done = run_python([str(guarded)])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["sum", "of", "squares:", str(sum(i * i for i in range(64)))]

    guard = 'if __name__ == "__main__":'
    text = guarded.read_text()
    assert text.count(guard) == 1
    unguarded = tmp_path / "train.py"
    unguarded.write_text(text.replace(guard, "if True:  # no guard"))
    failed = run_python([str(unguarded)])
    assert failed.returncode != 0 and "sum of squares" not in failed.stdout
    assert "has finished its bootstrapping phase" in failed.stderr, failed.stderr[-2000:]
