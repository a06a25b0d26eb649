"""loaderlab.cores: the affinity, capped by a cgroup quota (v2 or v1), at least 1."""

from __future__ import annotations

from loaderlab import cores


def test_the_quota_caps_the_affinity(tmp_path, monkeypatch):
    v2 = tmp_path / "cpu.max"
    v2.write_text("200000 100000\n")
    monkeypatch.setattr(cores, "affinity_cores", lambda: 64)
    assert cores.cgroup_quota_cores(v2) == 2.0
    monkeypatch.setattr(cores, "cgroup_quota_cores", lambda: 2.0)
    assert cores.usable_cores() == 2


def test_no_quota_keeps_the_affinity(tmp_path, monkeypatch):
    v2 = tmp_path / "cpu.max"
    v2.write_text("max 100000\n")
    missing = (tmp_path / "no_quota", tmp_path / "no_period")
    assert cores.cgroup_quota_cores(v2, missing) is None
    monkeypatch.setattr(cores, "affinity_cores", lambda: 16)
    monkeypatch.setattr(cores, "cgroup_quota_cores", lambda: None)
    assert cores.usable_cores() == 16


def test_cgroup_v1_and_a_fraction_of_a_core(tmp_path, monkeypatch):
    quota, period = tmp_path / "quota", tmp_path / "period"
    quota.write_text("50000\n")
    period.write_text("100000\n")
    assert cores.cgroup_quota_cores(tmp_path / "absent", (quota, period)) == 0.5
    monkeypatch.setattr(cores, "affinity_cores", lambda: 8)
    monkeypatch.setattr(cores, "cgroup_quota_cores", lambda: 0.5)
    assert cores.usable_cores() == 1
