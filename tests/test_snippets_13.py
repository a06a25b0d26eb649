"""Notebook 13's snippet, docs/snippets/resume_mid_epoch.py: an epoch interrupted after k batches,
checkpointed to a file and resumed by a new loader, model and optimizer yields the uninterrupted
epoch's batches exactly (also when the resumed loader spawns its workers), and does not without the dataset's
state_dict; each worker draws its own noise without a worker_init_fn, also inside a Subset, and
no generator travels to a worker; a checkpoint saved with another num_workers is refused with a
sentence."""

from __future__ import annotations

import importlib
import multiprocessing

import pytest
import torch
from course_code import ROOT, snippet

pytestmark = [
    pytest.mark.usefixtures("no_leaked_workers"),
    pytest.mark.filterwarnings("ignore:'set_vital' is deprecated"),
]  # torchdata 0.11 on torch 2.13
needs_fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")


def fresh(module, dataset_class, context, num_workers=2):
    """What a (re)started script builds: dataset, loader, model, optimizer, all seeded alike."""
    dataset = dataset_class(torch.arange(40, dtype=torch.float32).reshape(20, 2), noise=1.0)
    loader = module.make_loader(dataset, batch_size=4, num_workers=num_workers)
    loader.multiprocessing_context = context
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    return loader, model, torch.optim.SGD(model.parameters(), lr=0.1)


def identical(batches, reference):
    """Per batch: equal to the reference's (a missing or extra batch raises)."""
    return [torch.equal(a, b) for a, b in zip(batches, reference, strict=True)]


def train(loader, model, optimizer, batches, stop_after=None):
    for batch in loader:
        batches.append(batch)
        optimizer.zero_grad()
        model(batch).sum().backward()
        optimizer.step()
        if len(batches) == stop_after:
            return


def interrupted_epoch(module, tmp_path, dataset_class, context, resume_context=None, k=3):
    """(uninterrupted batches, the same epoch interrupted after k and resumed (its workers started by
    resume_context), per tensor of the model: equal to the uninterrupted run's)."""
    loader, reference_model, optimizer = fresh(module, dataset_class, context)
    reference = []
    train(loader, reference_model, optimizer, reference)
    loader, model, optimizer = fresh(module, dataset_class, context)
    batches = []
    train(loader, model, optimizer, batches, stop_after=k)
    module.save_checkpoint(tmp_path / "checkpoint.pt", loader, model, optimizer)
    del loader  # the job ends
    loader, model, optimizer = fresh(module, dataset_class, resume_context or context)
    module.resume(tmp_path / "checkpoint.pt", loader, model, optimizer)
    train(loader, model, optimizer, batches)
    return reference, batches, identical(model.state_dict().values(), reference_model.state_dict().values())


@pytest.mark.course
@needs_fork
def test_resumed_epoch_is_the_uninterrupted_one_and_not_without_the_dataset_state(tmp_path):
    module = snippet("resume_mid_epoch")
    reference, batches, same_model = interrupted_epoch(module, tmp_path, module.NoisySamples, "fork")
    assert len(reference) == 5 and all(identical(batches, reference)) and all(same_model)

    class Unsaved(module.NoisySamples):
        state_dict = load_state_dict = None  # not Stateful: the loader cannot save the generator

    reference, batches, same_model = interrupted_epoch(module, tmp_path, Unsaved, "fork")
    assert identical(batches, reference) == [True] * 3 + [False] * 2 and not all(same_model)


@pytest.mark.spawn
@pytest.mark.course
@needs_fork
def test_an_epoch_saved_by_forked_workers_resumes_exactly_in_spawned_workers(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "docs" / "snippets"))  # spawned workers import it by name
    module = importlib.import_module("resume_mid_epoch")
    # only the resumed loader spawns (each spawned worker imports torch): the dataset travels
    # pickled without its generator, the worker builds one, load_state_dict restores its state
    reference, batches, same_model = interrupted_epoch(module, tmp_path, module.NoisySamples, "fork", "spawn")
    assert len(batches) == 5 and all(identical(batches, reference)) and all(same_model)


@needs_fork
def test_each_worker_draws_its_own_noise_also_in_a_subset_and_ships_no_generator():
    module = snippet("resume_mid_epoch")
    dataset = module.NoisySamples(torch.zeros(8, 1), noise=1.0)
    dataset[0]  # a generator now exists in this process ...
    assert dataset.rng is not None and dataset.__getstate__()["rng"] is None  # ... not sent to a worker
    for wrapped in (dataset, torch.utils.data.Subset(dataset, range(8))):
        loader = module.make_loader(wrapped, batch_size=1, num_workers=2)
        loader.multiprocessing_context = "fork"
        epochs = [[float(x) for x in loader] for _ in range(2)]  # the workers take turns: 0, 1, 0, 1, ...
        assert len(set(epochs[0])) == 8 and len(set(epochs[0] + epochs[1])) == 16  # per worker, per epoch


@pytest.mark.course
@needs_fork
def test_a_checkpoint_of_another_num_workers_is_refused_with_a_sentence(tmp_path):
    module = snippet("resume_mid_epoch")
    loader, model, optimizer = fresh(module, module.NoisySamples, "fork")
    next(iter(loader))
    module.save_checkpoint(tmp_path / "checkpoint.pt", loader, model, optimizer)
    del loader
    other, model, optimizer = fresh(module, module.NoisySamples, "fork", num_workers=1)
    with pytest.raises(ValueError, match="num_workers=2 as saved, not 1"):
        module.resume(tmp_path / "checkpoint.pt", other, model, optimizer)
    assert other.next_iter_state is None  # nothing was loaded
