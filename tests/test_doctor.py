"""Tests of loaderlab.doctor: every broken loader of the course is flagged with its code, the
fixed versions raise no warning, the user's loader is left as it was, and the command line
returns 0/1/2. The loaders are notebook 17's (notebooks/lesson17*.py, written by its
%%writefile cells), the one source the notebook shows."""

from __future__ import annotations

import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from course_code import lesson
from torch.utils.data import DataLoader, default_collate, get_worker_info

from loaderlab.__main__ import main
from loaderlab.datasets import LatencyDataset
from loaderlab.doctor import (
    PROBES,
    SECTIONS,
    Finding,
    Report,
    anchor,
    doctor,
    probe_for,
    section_link,
)
from loaderlab.doctor_probes import equal_positions, fingerprint, random_part, state_of
from loaderlab.failures import CrashingDataset

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PER_PROBE_S = 20.0

# spawn and forkserver workers import the lesson modules by name, as the notebook's do, and the
# command line imports lesson17_loaders: the notebooks folder stays on sys.path
sys.path.insert(0, str(NOTEBOOKS))
ex = lesson("lesson17_loaders")
l17 = lesson("lesson17")


def run(factory, **kwargs) -> Report:
    start = time.perf_counter()
    report = doctor(factory, time_budget_s=10.0, **kwargs)
    wall = time.perf_counter() - start
    assert wall < PER_PROBE_S, f"doctor took {wall:.1f} s"
    return report


@pytest.mark.parametrize("name", sorted(ex.BROKEN))
def test_each_broken_course_loader_is_flagged_with_its_code(name, no_leaked_workers):
    report = run(getattr(ex, name))
    expected = ex.BROKEN[name]
    assert expected in report.codes("warning"), (name, report.codes())
    finding = next(f for f in report.findings if f.code == expected)
    assert finding.fix and finding.link.startswith("notebooks/") and finding.figures


@pytest.mark.parametrize("name", ["broken_held_rng", "broken_partial_batches", "broken_lambda_collate"])
def test_the_probe_named_by_probe_for_alone_finds_the_code(name, no_leaked_workers):
    code = ex.BROKEN[name]
    report = run(getattr(ex, name), probes=[probe_for(code)])
    assert code in report.codes() and report.probes_run == [probe_for(code)]


def test_probe_for_rejects_unknown_codes():
    with pytest.raises(ValueError, match="code"):
        probe_for("nope")
    with pytest.raises(ValueError, match="one probe"):
        probe_for("loader.raises")


@pytest.mark.parametrize("name", sorted(ex.FIXED))
def test_fixed_course_loaders_raise_no_warning(name, no_leaked_workers):
    report = run(getattr(ex, name))
    assert report.at_least("warning") == [], str(report)
    assert "speed" in report.probes_run and not report.probes_skipped


def test_more_workers_than_cores_is_a_note_and_torchs_warning_is_not_repeated(recwarn, no_leaked_workers):
    report = run(ex.fixed_too_few_workers, probes=["speed"])
    assert [(f.severity, f.code) for f in report.findings] == [("info", "speed.workers_over_cores")]
    assert not [w for w in recwarn if "worker processes in total" in str(w.message)]


def test_distributed_sampler_with_set_epoch_is_healthy(no_leaked_workers):
    report = run(ex.broken_distributed_order, between_epochs=ex.set_sampler_epoch)
    assert "distributed.no_set_epoch" not in report.codes()
    assert report.figures["distributed"]["same_order"] is False


def test_distributed_sampler_without_shuffle_is_not_flagged():
    from torch.utils.data.distributed import DistributedSampler

    dataset = LatencyDataset(n=64, latency_s=0.0)
    loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset, 2, 0, shuffle=False))
    assert doctor(loader, probes=["distributed"]).findings == []


def test_only_the_random_values_are_compared_not_the_worker_id_column(no_leaked_workers):
    # GlobalDraws returns [index, random, numpy, torch]; only the numpy column
    # repeats when workers inherit NumPy's state: one value per sample.
    report = run(ex.broken_inherited_numpy, probes=["random"])
    assert report.figures["random"]["values_repeated_across_workers"] == 1
    healthy = run(ex.fixed_held_rng, probes=["random"])
    assert healthy.figures["random"]["values_repeated_across_workers"] == 0


def test_persistent_workers_keep_their_generators_so_epochs_do_not_repeat(no_leaked_workers):
    loader = DataLoader(
        l17.HeldRng(16), batch_size=4, num_workers=2, persistent_workers=True,
        worker_init_fn=lesson("lesson17_b").reseed_worker,
    )
    report = run(loader, probes=["random", "persistent"])
    assert report.codes("warning") == []
    assert "compared_across_epochs" not in report.figures["random"]  # one epoch: nothing to compare


def seed_from_worker_id(worker_id: int) -> None:
    """A worker_init_fn that seeds the dataset's generator from the worker id: every epoch's
    worker k draws what worker k drew in the epoch before."""
    get_worker_info().dataset.rng = np.random.default_rng(worker_id)


@pytest.mark.parametrize("hook", [None, lambda loader, epoch: None], ids=["together", "after-hook"])
def test_a_generator_seeded_from_the_worker_id_repeats_across_epochs_only(hook, no_leaked_workers):
    loader = DataLoader(l17.HeldRng(32), batch_size=4, num_workers=2, worker_init_fn=seed_from_worker_id)
    report = run(loader, probes=["random"], between_epochs=hook)
    assert report.codes() == ["random.repeats_across_epochs"]
    # epoch 2 replays worker 0's 12 fetches in one fresh worker
    assert report.figures["random"]["compared_across_epochs"] == 12


def test_the_speed_sweep_starts_more_workers_only_when_a_batch_costs_enough(no_leaked_workers):
    # in-memory samples: a batch costs microseconds, so more workers than yours cannot help
    # and are not started; one pass with 2 workers stays, for the workers' memory
    assert list(run(ex.broken_last_batch_of_one, probes=["speed"]).figures["speed"]["samples_per_s"]) == [0, 2]
    assert list(run(ex.fixed_held_rng, probes=["speed"]).figures["speed"]["samples_per_s"]) == [0, 2]
    slow = run(ex.broken_too_few_workers, probes=["speed"])  # 80 ms per batch: every count
    assert list(slow.figures["speed"]["samples_per_s"]) == [0, 2, 4]
    assert slow.codes() == ["speed.more_workers"]


def test_large_containers_are_found_by_a_probe_that_starts_no_worker(no_leaked_workers):
    report = run(ex.broken_cow_table, probes=[probe_for("memory.python_container")])
    assert report.probes_run == ["containers"] and set(report.figures) == {"containers"}
    assert report.codes() == ["memory.python_container"]
    assert probe_for("memory.worker_growth") == "speed"


def test_stale_state_is_measured_with_the_users_epoch_hook(no_leaked_workers):
    def hook(loader, epoch):
        loader.dataset.epoch = epoch

    report = run(ex.broken_stale_epoch, probes=["persistent"], between_epochs=hook)
    assert report.codes() == ["persistent.stale_state"]
    assert report.figures["persistent"]["stale_in_workers"] == ["epoch"]


def test_a_lambda_under_spawn_is_an_error_and_no_worker_is_started(no_leaked_workers):
    loader = DataLoader(
        LatencyDataset(n=32, latency_s=0.0), batch_size=8, num_workers=2,
        collate_fn=lambda b: default_collate(b), multiprocessing_context="spawn",
    )
    report = run(loader)
    assert [(f.severity, f.code) for f in report.at_least("warning")] == [("error", "pickle.fails")]
    assert set(report.probes_skipped) == {"random", "speed"}


def test_a_class_defined_in_main_is_a_spawn_warning(monkeypatch):
    class MainDataset(LatencyDataset):
        pass

    MainDataset.__module__ = "__main__"
    MainDataset.__qualname__ = "MainDataset"
    monkeypatch.setattr(sys.modules["__main__"], "MainDataset", MainDataset, raising=False)
    report = doctor(DataLoader(MainDataset(n=16, latency_s=0.0), batch_size=4), probes=["pickling"])
    assert report.codes() == ["pickle.main_module"]
    assert report.findings[0].figures["names"] == ["MainDataset"]


def test_a_dataset_that_raises_is_reported_not_raised(no_leaked_workers):
    report = run(DataLoader(CrashingDataset(n=16, fail_at=5), batch_size=4, num_workers=2))
    errors = [f for f in report.findings if f.code == "loader.raises"]
    assert errors and "sample 5 is corrupt" in errors[0].message


def test_the_users_loader_and_generators_are_left_as_they_were(no_leaked_workers):
    generator = torch.Generator().manual_seed(7)
    loader = DataLoader(
        LatencyDataset(n=64, latency_s=0.0), batch_size=8, shuffle=True, num_workers=2,
        persistent_workers=True, generator=generator,
    )
    torch_state, gen_state, np_state = torch.get_rng_state(), generator.get_state(), np.random.get_state()[1].copy()
    report = run(loader)
    assert loader._iterator is None  # never iterated: no worker of the user's loader started
    assert torch.equal(torch.get_rng_state(), torch_state)
    assert torch.equal(generator.get_state(), gen_state)
    assert np.array_equal(np.random.get_state()[1], np_state)
    assert report.probes_run == [p for p in PROBES if p != "iterable"]


def test_time_budget_bounds_the_probe(no_leaked_workers):
    start = time.perf_counter()
    report = doctor(ex.broken_too_few_workers, time_budget_s=1.0, max_batches=1000)
    assert time.perf_counter() - start < 8.0  # a 10 ms/sample loader; one epoch at 0 workers is 1.3 s
    assert report.wall_s < 8.0


@pytest.mark.parametrize(
    "bad, kind, text",
    [
        (42, TypeError, "loader_or_factory"),
        (lambda: "not a loader", TypeError, "loader_or_factory()"),
        ([1, 2, 3], TypeError, "loader_or_factory"),
    ],
)
def test_input_validation_names_the_argument(bad, kind, text):
    with pytest.raises(kind, match=text.replace("(", r"\(").replace(")", r"\)")):
        doctor(bad)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"time_budget_s": 0}, "time_budget_s"),
        ({"max_batches": 0}, "max_batches"),
        ({"workers": [-1]}, "workers"),
        ({"step_s": -1.0}, "step_s"),
        ({"probes": ["nope"]}, "probes"),
        ({"probes": "random"}, "probes"),
    ],
)
def test_option_validation_names_the_option(kwargs, name):
    with pytest.raises(ValueError, match=name):
        doctor(ex.fixed_collate, **kwargs)


def test_between_epochs_must_be_callable():
    with pytest.raises(TypeError, match="between_epochs"):
        doctor(ex.fixed_collate, between_epochs=3)


def test_every_finding_links_to_a_heading_that_exists():
    for code, (notebook, heading) in SECTIONS.items():
        cells = json.loads((NOTEBOOKS / notebook).read_text())["cells"]
        lines = {line for c in cells if c["cell_type"] == "markdown" for line in "".join(c["source"]).splitlines()}
        assert heading in lines, (code, notebook, heading)
        assert section_link(code) == f"notebooks/{notebook}#{anchor(heading)}"
    assert anchor("## 4. Fix: `drop_last=True` now") == "4.-Fix:-drop_last=True-now"


def test_finding_rejects_unknown_severity_and_code():
    with pytest.raises(ValueError, match="severity"):
        Finding("fatal", "pickle.fails", "m", "f")
    with pytest.raises(ValueError, match="code"):
        Finding("error", "no.such.code", "m", "f")


def test_report_text_holds_message_figure_fix_and_link():
    report = doctor(ex.broken_last_batch_of_one, probes=["batches"])
    text = str(report)
    assert "65 samples in batches of 8" in text and "drop_last=True" in text
    assert "notebooks/02_batches_drop_last_and_samplers.ipynb#4.-Fix:" in text
    assert report.summary() == "warning batch.last_size_1" and report.worst == "warning"


def test_worker_growth_counts_from_the_mark_after_start_up():
    from loaderlab.doctor import _growth_after_start
    from loaderlab.measure import MemoryRecord, WorkerMemorySampler

    sampler = WorkerMemorySampler()
    rows = [(0.0, 11, 300.0), (0.1, 11, 100.0), (0.2, 11, 140.0), (0.3, 11, 120.0), (0.2, 12, 50.0), (0.2, 99, 1.0)]
    sampler.records = [MemoryRecord(t, pid, "worker", uss, uss, None) for t, pid, uss in rows]
    # reading 0 is start-up; pid 12 has one reading only; pid 99 was alive before the pass
    assert _growth_after_start(sampler, before={99}, start=1) == {11: 40.0}
    assert _growth_after_start(sampler, before=set(), start=None) == {}


def test_the_memory_figure_is_measured_during_a_pass(no_leaked_workers):
    report = run(ex.broken_cow_table, probes=["speed"])
    growth = report.figures["memory"]["worker_uss_growth_mb"]
    assert len(growth) >= 2 and all(v >= 0 for v in growth.values())


def test_fingerprints_compare_content_not_identity():
    a = {"x": torch.arange(4.0), "y": [1, "s"], "z": np.ones(3)}
    b = {"z": np.ones(3), "y": [1, "s"], "x": torch.arange(4.0)}
    assert fingerprint(a) == fingerprint(b)
    assert fingerprint(torch.arange(4.0)) != fingerprint(torch.arange(4))  # dtype counts
    assert fingerprint(pickle.loads(pickle.dumps(a))) == fingerprint(a)


def test_random_part_and_equal_positions():
    first = (torch.tensor([1.0, 0.25, 3.0]), 7)
    again = (torch.tensor([1.0, 0.75, 3.0]), 7)
    masks = random_part(first, again)
    assert masks[0].tolist() == [False, True, False] and masks[1] is False
    assert equal_positions(masks, first, (torch.tensor([9.0, 0.25, 9.0]), 7)) == {1}
    assert equal_positions(masks, first, (torch.tensor([1.0, 0.5, 3.0]), 7)) == set()
    assert equal_positions(masks, first, torch.zeros(2)) is None


def test_state_of_keeps_small_attributes_only():
    l17d = lesson("lesson17_d")
    assert set(state_of(l17d.EpochSeen(4))) == {"n", "epoch"}
    assert set(state_of(l17d.SharedEpochSeen(4))) == {"n", "shared_epoch"}
    assert "rows" not in state_of(ex.broken_cow_table(rows=20_000).dataset)


# ------------------------------------------------------------------------------ CLI


def test_cli_exit_status_follows_fail_on(capsys):
    args = ["doctor", "--no-progress", "--time-budget", "5"]
    assert main([*args, "lesson17_loaders:broken_last_batch_of_one"]) == 0  # a warning < error
    assert "batch.last_size_1" in capsys.readouterr().out
    assert main([*args, "--fail-on", "warning", "lesson17_loaders:broken_last_batch_of_one"]) == 1
    assert main([*args, "--fail-on", "warning", "lesson17_loaders:fixed_collate"]) == 0


@pytest.mark.parametrize(
    "target, text",
    [
        ("no_such_module_xyz:make", "cannot import module 'no_such_module_xyz'"),
        ("lesson17_loaders", "must look like 'my_module:make_loader'"),
        ("lesson17_loaders:nothing_here", "has no attribute 'nothing_here'"),
        ("lesson17_loaders:BROKEN", "is a dict, not a DataLoader"),
        ("lesson17_loaders:set_sampler_epoch", "must be callable with no argument"),
        ("lesson17_loaders:__doc__", "is a str, not a DataLoader"),
        ("loaderlab.data:workspace", "not a torch.utils.data.DataLoader"),
    ],
)
def test_cli_usage_errors_exit_2_with_one_sentence(target, text, capsys):
    assert main(["doctor", "--no-progress", target]) == 2
    err = capsys.readouterr().err.strip()
    assert text in err and len(err.splitlines()) == 1


def test_cli_rejects_bad_workers_list(capsys):
    assert main(["doctor", "--workers", "two", "lesson17_loaders:fixed_collate"]) == 2
    assert "--workers" in capsys.readouterr().err
