"""Notebook 18's playground without a browser: the dataset's costs, the DataLoader the settings
make, a bounded run over several epochs, the model's limits (notebooks/lesson18_samples*.py), and the
playground's controls (loaderlab.playground): presets, a moved knob, one run per
debounce, a failing run on the status line."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import psutil
import pytest
from course_code import lesson

pytestmark = pytest.mark.usefixtures("no_leaked_workers")


@pytest.mark.course
def test_samples_cost_their_cpu_and_io_and_the_slow_ones_are_fixed():
    dataset = lesson("lesson18_samples").SyntheticSamples(
        n=200, cpu_ms=3.0, io_ms=2.0, slow_rate=0.05, slow_ms=30.0
    )
    slow = [i for i in range(200) if dataset.is_slow(i)]
    assert 5 <= len(slow) <= 15 and slow == [i for i in range(200) if dataset.is_slow(i)]
    fast = next(i for i in range(200) if not dataset.is_slow(i))
    start = time.perf_counter()
    x, y = dataset[fast]
    assert time.perf_counter() - start >= 0.005 and x.shape == (64,) and float(x[0]) == fast and y == fast % 2
    start = time.perf_counter()
    dataset[slow[0]]
    assert time.perf_counter() - start >= 0.035  # lower bounds (5 ms, 35 ms): a sleep never ends early


def test_loader_call_and_build_loader_follow_the_settings():
    module = lesson("lesson18_settings")
    s = replace(module.PRESETS["spiky reads"], in_order=False, persistent_workers=False)
    assert module.loader_call(s) == (
        "DataLoader(dataset, batch_size=8, num_workers=2, prefetch_factor=2, "
        "persistent_workers=False, in_order=False)"
    )
    call = module.loader_call(module.PRESETS["in-memory tensors"])
    assert call == "DataLoader(dataset, batch_size=64, num_workers=0)"
    loader = module.build_loader(replace(s, pin_memory=True), collate_fn=None)
    assert (loader.batch_size, loader.num_workers, loader.prefetch_factor, len(loader)) == (8, 2, 2, 8)
    assert not loader.in_order and not loader.persistent_workers
    main = module.build_loader(module.PRESETS["in-memory tensors"], collate_fn=None)
    assert main.num_workers == 0 and main.prefetch_factor is None


@pytest.mark.course
def test_predict_names_the_binding_limit():
    module = lesson("lesson18_settings")
    cpu = module.predict(module.PRESETS["CPU-bound decode"], free_cores=1.0)
    assert cpu["binds"] == "free cores" and cpu["samples_per_s"] == pytest.approx(250)
    assert cpu["wait_share"] == pytest.approx(1 - 250 / 800)
    reads = module.predict(module.PRESETS["slow network reads"], free_cores=2.0)
    assert reads["binds"] == "workers" and reads["samples_per_s"] == pytest.approx(2000 / 20.2)
    plenty = module.predict(replace(module.PRESETS["slow network reads"], num_workers=8, step_ms=60), 2.0)
    assert plenty["binds"] == "step" and plenty["wait_share"] == 0.0
    memory = module.predict(module.PRESETS["in-memory tensors"], free_cores=2.0)
    assert memory["samples_per_s"] == pytest.approx(3200) and memory["wait_share"] == 0.0
    nothing = module.predict(replace(module.PRESETS["in-memory tensors"], step_ms=0.0), free_cores=2.0)
    assert math.isinf(nothing["samples_per_s"]) and nothing["wait_share"] == 0.0
    assert module.ideal(module.PRESETS["CPU-bound decode"], free_cores=2.0) == pytest.approx(500)
    # a sample of the spiky preset: 2 ms read + 0.5 ms decode + 5 % of 250 ms slow reads
    assert module.sample_ms(module.PRESETS["spiky reads"]) == pytest.approx(15.0)


@pytest.mark.course
@pytest.mark.parametrize("persistent", [True, False])
def test_a_bounded_run_spans_epochs_and_measures_them(persistent):
    module = lesson("lesson18_settings")
    s = module.Settings(
        cpu_ms=0.0, io_ms=1.0, batch_size=2, num_workers=1, persistent_workers=persistent, step_ms=5.0
    )
    seen = []
    result = module.run(s, seconds=0.3, on_progress=seen.append)
    assert 0 <= result["free_cores"] <= len(psutil.cpu_times(percpu=True))
    timeline = result["timeline"]
    assert len(timeline.records) > 8  # more than one epoch of 8 batches
    assert [r["batch"] for r in timeline.records] == list(range(len(timeline.records)))
    assert all(
        a["received"] <= b["requested"]
        for a, b in zip(timeline.records[:-1], timeline.records[1:], strict=True)
    )
    assert seen[-1] == 1.0 and timeline.batches_per_worker() == {0: len(timeline.records)}
    got = module.measured(result)
    # a ceiling: 2 samples per step of at least 5 ms is 400/s; +20 % for the timer's resolution
    assert 0 < got["samples_per_s"] < 2 / 0.005 * 1.2 and 0 <= got["wait_share"] < 1
    assert not persistent or any(r.role == "worker" for r in result["memory"])  # read every 0.25 s


def _playground(runs: list, fail: bool = False):
    """The notebook's controls and presets around a stand-in run that records its settings."""
    import ipywidgets as widgets
    import matplotlib.figure

    from loaderlab.playground import Playground

    module = lesson("lesson18_settings")
    s = module.Settings()
    controls = {
        name: widgets.Checkbox(getattr(s, name), description=name)
        if isinstance(getattr(s, name), bool)
        else widgets.FloatText(getattr(s, name), description=name)
        for name in vars(s)
    }
    controls["pin_memory"].disabled = True  # no accelerator: the preset does not touch it

    def run(settings, on_progress):
        if fail:
            raise ValueError("no loader for these settings")
        runs.append(settings)
        on_progress(0.5)
        on_progress(1.0)
        return {"settings": settings}

    return module, Playground(
        controls,
        module.PRESETS,
        module.Settings,
        run=run,
        preset="CPU-bound decode",
        picture=lambda result: matplotlib.figure.Figure(figsize=(1, 1)),
        report=lambda result: "report",
        debounce_s=0.5,
        timer=FakeTimer,
        call=lambda result: module.loader_call(result["settings"]),
    )


class FakeTimer:
    """threading.Timer's interface with a fake clock: nothing fires until the test says so, so
    "changes within the debounce make one run" is logic, not a race with a 0.5 s timer."""

    def __init__(self, interval: float, function) -> None:
        self.interval, self.function, self.daemon = interval, function, False
        self.started = self.cancelled = self.fired = False

    def start(self) -> None:
        self.started = True

    def cancel(self) -> None:
        self.cancelled = True

    def is_alive(self) -> bool:
        return self.started and not (self.cancelled or self.fired)


def _settled(playground) -> None:
    """The controls have been still for the debounce: the pending timer fires (once)."""
    timer = playground.timer
    if timer is not None and timer.is_alive():
        timer.fired = True
        timer.function()
    playground.close()


def test_a_preset_sets_every_control_and_a_moved_knob_leaves_it():
    runs = []
    module, playground = _playground(runs)
    playground.preset.value = "slow network reads"
    assert playground.current() == module.PRESETS["slow network reads"]
    playground.controls["num_workers"].value = 4
    assert playground.preset.value == "(yours)"
    assert playground.current() == replace(module.PRESETS["slow network reads"], num_workers=4)
    _settled(playground)
    assert runs == [playground.current()]  # the preset and the knob within the debounce: one run
    assert playground.status.value.startswith("redrawn in") and playground.progress.value == 1.0
    assert "num_workers=4" in playground.code.value and playground.image.value


def test_changes_during_the_debounce_make_one_run_and_a_failure_is_shown():
    runs = []
    _, playground = _playground(runs)
    for workers in (3, 4, 6):
        playground.controls["num_workers"].value = workers
    _settled(playground)
    assert [s.num_workers for s in runs] == [6]
    _, failing = _playground([], fail=True)
    failing.controls["step_ms"].value = 50.0
    _settled(failing)
    assert failing.status.value == "the run failed: ValueError: no loader for these settings"
    assert failing.progress.bar_style == "danger"


def test_others_cpu_can_count_only_the_cpus_this_process_may_use(monkeypatch):
    import os

    import loaderlab
    from loaderlab.measure import family

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid=0: {0, 10_000}, raising=False)  # CPU 10000: none
    assert family.usable_cpus() == [0]
    others = loaderlab.OthersCpu(usable_only=True).start()
    time.sleep(0.2)
    others.stop()
    assert others.cores >= 0 and others.free == pytest.approx(max(0.0, 1 - others.cores)) and others.free <= 1
    everywhere = loaderlab.OthersCpu().start()
    time.sleep(0.1)
    everywhere.stop()
    assert everywhere.free == pytest.approx(max(0.0, len(psutil.cpu_times(percpu=True)) - everywhere.cores))
