"""Notebook 14's snippets: data_wait.py tells a data-bound loop from a compute-bound one,
profile_loader.py records torch's DataLoader event inside its "data" ranges and writes a
trace file, out_of_order.py lets batches overtake a slow one. The loaders read notebook 14's
own dataset (notebooks/lesson14_slow_reads.py)."""

from __future__ import annotations

import json
import time

import pytest
from course_code import lesson, snippet
from torch.utils.data import DataLoader

pytestmark = pytest.mark.usefixtures("no_leaked_workers")


def sleep_step(seconds):
    return lambda batch: time.sleep(seconds)


@pytest.mark.course
@pytest.mark.timing
def test_data_wait_fraction_tells_data_bound_from_compute_bound():
    module, slow_reads = snippet("data_wait"), lesson("lesson14_slow_reads").SlowReads
    dataset = slow_reads(n=32, read_s=0.010)  # 40 ms per batch of 4
    waits, steps = module.time_epoch(DataLoader(dataset, batch_size=4), sleep_step(0.0))
    assert len(waits) == len(steps) == 8 and min(waits) >= 0.035  # no workers: every read is waited for
    data_bound = module.data_wait_fraction(
        DataLoader(dataset, batch_size=4, num_workers=1), sleep_step(0.010)
    )
    compute_bound = module.data_wait_fraction(
        DataLoader(dataset, batch_size=4, num_workers=2), sleep_step(0.060)
    )
    assert data_bound > 0.5 and compute_bound < 0.2  # about 0.75 and 0


@pytest.mark.course
@pytest.mark.parametrize("num_workers", [0, 1])
def test_profile_steps_records_the_dataloader_event_inside_each_data_range(tmp_path, capsys, num_workers):
    dataset = lesson("lesson14_slow_reads").SlowReads(n=16, read_s=0.005)
    loader = DataLoader(dataset, batch_size=2, num_workers=num_workers)
    trace = tmp_path / "trace.json"
    prof = snippet("profile_loader").profile_steps(loader, sleep_step(0.001), trace_path=trace, steps=3)
    kind = "_MultiProcessingDataLoaderIter" if num_workers else "_SingleProcessDataLoaderIter"
    event = f"enumerate(DataLoader)#{kind}.__next__"
    counts = {e.key: e.count for e in prof.key_averages()}
    assert counts["data"] == counts["step"] == counts[event] == 3
    table = capsys.readouterr().out
    assert "data" in table and "step" in table and event[:30] in table
    names = [e.get("name") for e in json.loads(trace.read_text())["traceEvents"]]
    assert names.count("data") == names.count(event) == names.count("step") == 3


@pytest.mark.course
@pytest.mark.timing
def test_out_of_order_loader_lets_batches_overtake_a_slow_one():
    dataset = lesson("lesson14_slow_reads").SlowReads(n=16, read_s=0.0, slow=(0,), slow_s=0.5)
    loader = snippet("out_of_order").out_of_order_loader(dataset, batch_size=4, shuffle=False, num_workers=2)
    firsts = [int(indices[0]) for _, indices in loader]
    assert sorted(firsts) == [0, 4, 8, 12] and firsts[0] != 0  # the same batches, the slow one later
    ordered = [int(indices[0]) for _, indices in DataLoader(dataset, batch_size=4, num_workers=2)]
    assert ordered == [0, 4, 8, 12]  # the default waits for it
