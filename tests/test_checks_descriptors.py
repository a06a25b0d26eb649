"""Lab 15 checker: every batch of a worker loader kept within a lowered descriptor limit."""

from __future__ import annotations

import sys

import pytest

from loaderlab.checks.lab15 import check_kept_batches
from loaderlab.labs import lab15 as descriptors

pytestmark = [
    pytest.mark.usefixtures("no_leaked_workers"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
]


def _verdict(capsys, keep) -> str:
    ok = check_kept_batches(keep)
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1 and "Traceback" not in out, out
    assert ok == out.startswith("✅")
    return out


def as_lists(batch):
    """Correct, unlike the solution: plain Python lists."""
    return [part.tolist() for part in batch]


def as_arrays(batch):
    """Correct, differently: NumPy copies."""
    features, labels = batch
    return features.numpy().copy(), labels.numpy().copy()


@pytest.mark.parametrize("keep", [as_lists, as_arrays], ids=["lists", "numpy-copies"])
def test_correct_answers_pass(capsys, keep):
    assert _verdict(capsys, keep).startswith("✅ all 150 batches kept"), keep


@pytest.mark.course
@pytest.mark.parametrize(
    ("keep", "sentence"),
    [
        (lambda batch: batch, "you keep the received tensors themselves"),
        (lambda batch: (batch[0].detach(), batch[1][:]), "your copies share the received memory"),
        (
            lambda batch: (batch[0].clone(), batch[1].clone() + 1),
            "what you kept of batch 0 is not its (features, labels)",
        ),
        (lambda batch: 1 / 0, "your keep raised ZeroDivisionError"),
    ],
    ids=["received", "views", "wrong-labels", "raises"],
)
def test_wrong_answers_fail_with_their_own_sentence(capsys, keep, sentence):
    out = _verdict(capsys, keep)
    assert out.startswith("❌") and sentence in out, out


def test_the_naive_answer_reproduces_emfile():
    report = descriptors.keep_in_child(lambda batch: batch)
    assert report["kept"] < descriptors.N_BATCHES and "Too many open files" in report["error"], report


def test_stub_and_nothing_are_not_attempted(capsys):
    def stub(batch):
        raise NotImplementedError("your code here")

    assert _verdict(capsys, stub).startswith("⏳ not attempted yet")
    assert _verdict(capsys, None).startswith("⏳ not attempted yet")


def test_says_where_it_is_not_supported(capsys, monkeypatch):
    monkeypatch.setattr(descriptors.sys, "platform", "darwin")
    out = _verdict(capsys, as_lists)
    assert out.startswith("❌ this experiment runs on Linux only"), out
