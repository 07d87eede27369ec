"""The trained weights a child reports are asked again in a model built afresh in a second child
(grader.engine.fresh_models): what goes to that child is the grader's data, checked, and what
comes back can only add the fresh model's own stages."""

import numpy as np
import pytest

from grader.engine.cases import save_cases
from grader.engine.fresh_models import MOST_WEIGHTS, follow_up, merge
from grader.sandbox.processes import Job
from grader.vocabulary.bundle import cases_from_bundle, load_bundle
from grader.vocabulary.protocol import Outcome, grad_key, output_key
from grader.vocabulary.spec import FRESH, MOVED, TRAIN, TRAINED, UNTRAINED, Case
from grader.vocabulary.status import RunState

pytestmark = pytest.mark.labs

PLAN = {"build": "build_model", "train": "train_model", "seed": 3, "probes": [["a", "f", "probe"]]}


def _job(tmp_path):
    case = Case(
        "build_model",
        TRAIN,
        "toy",
        inputs={
            "inputs": np.zeros((50, 4)),
            "targets": np.ones((50, 4)),
            "probe": np.arange(6.0).reshape(2, 3),
        },
        training=dict(PLAN),
    )
    (tmp_path / "cases").mkdir()
    (tmp_path / "work").mkdir()
    path = tmp_path / "cases" / "cases-train.npz"
    save_cases(path, [case])
    return Job("part-train", tmp_path / "s.py", path, tmp_path / "work", 5.0, group="student")


def _finished(weights: dict, extra=()):
    names = ["a", UNTRAINED, *extra] + [f"{TRAINED}/{name}" for name in weights]
    arrays = {output_key(0): np.ones(2), grad_key(0, "a"): np.ones(2)}
    arrays[grad_key(0, UNTRAINED)] = np.zeros(2)
    arrays.update({grad_key(0, f"{TRAINED}/{name}"): value for name, value in weights.items()})
    report = {"status": "ok", "output_dtype": "float64", "grads": names}
    return Outcome(RunState.FINISHED, 1.0, 0, {"import_error": None, "cases": [report]}, arrays)


def test_the_second_child_gets_the_weights_and_the_probes_not_the_training_data(tmp_path):
    job = _job(tmp_path)
    weights = {"0000": np.ones((3, 2), np.float32), "0001": np.zeros(2, np.float32)}
    second, _merge = follow_up(job, _finished(weights))
    assert second.group == "student-fresh" and second.key != job.key
    # Beside the grader's cases, never in the child's own folder (which it could fill).
    assert second.cases.parent == job.cases.parent
    meta, arrays = load_bundle(second.cases)
    (case,) = cases_from_bundle(meta["cases"], arrays)
    assert case.training["stage"] == FRESH and set(case.inputs) == {"probe"}
    assert set(case.weights) == set(weights)
    assert np.array_equal(case.weights["0000"], weights["0000"])


@pytest.mark.parametrize(
    "weights",
    [
        {},  # no weights: a model the grader cannot rebuild (MOVED then says so)
        {"../x": np.ones(2)},  # a name that is no weight's number
        {"0000": np.array(["a", "b"])},  # text, not numbers
        {f"{n:04d}": np.ones(1) for n in range(MOST_WEIGHTS + 1)},  # too many
    ],
)
def test_weights_that_are_not_a_models_go_to_no_second_child(tmp_path, weights):
    assert follow_up(_job(tmp_path), _finished(weights)) is None


def test_a_child_that_did_not_finish_has_no_second_child(tmp_path):
    outcome = _finished({"0000": np.ones(2)})
    outcome.state = RunState.TIMED_OUT
    assert follow_up(_job(tmp_path), outcome) is None


def test_the_second_child_adds_only_the_fresh_models_stages(tmp_path):
    first = _finished({"0000": np.ones(2)})
    answered_arrays = {
        output_key(0): np.ones(2),
        grad_key(0, MOVED): np.full(2, 7.0),
        grad_key(0, f"{MOVED}/a"): np.full(2, 7.0),
        grad_key(0, UNTRAINED): np.full(2, 9.0),  # not its stage: the first child's stands
    }
    report = {"status": "ok", "output_dtype": "float64", "grads": [MOVED, f"{MOVED}/a", UNTRAINED]}
    answered = Outcome(RunState.FINISHED, 2.0, 0, {"cases": [report]}, answered_arrays)
    merged = merge(first, [0], answered)
    assert np.array_equal(merged.arrays[grad_key(0, MOVED)], np.full(2, 7.0))
    assert np.array_equal(merged.arrays[grad_key(0, UNTRAINED)], np.zeros(2))
    assert not [key for key in merged.arrays if TRAINED in key]
    assert merged.meta["cases"][0]["grads"] == ["a", UNTRAINED, MOVED, f"{MOVED}/a"]
    assert merged.seconds == 3.0


def test_a_second_child_that_failed_adds_nothing(tmp_path):
    first = _finished({"0000": np.ones(2)})
    crashed = Outcome(RunState.CRASHED, 1.0, 9, problem="killed")
    merged = merge(first, [0], crashed)
    assert merged.meta["cases"][0]["grads"] == ["a", UNTRAINED]
    assert MOVED not in {key.split("/")[-1] for key in merged.arrays}


def test_the_second_child_works_in_a_folder_of_its_own_that_the_first_left_nothing_in(tmp_path):
    """A first child that writes its counts to a file in its folder must not find them again
    in the second (a fresh model that reads the file answers without its weights)."""
    job = _job(tmp_path)
    (job.directory / "counts.json").write_text("{}")
    second, _merge = follow_up(job, _finished({"0000": np.ones(2)}))
    assert second.directory != job.directory and second.directory.is_dir()
    assert list(second.directory.iterdir()) == [] and second.module == job.module


def test_a_module_in_the_first_childs_folder_comes_to_the_second_as_the_grader_copied_it(tmp_path):
    """In a batch the submission is copied into the child's folder, where the child may write:
    the second child gets a new copy of the grader's own, not the module the first rewrote."""
    from dataclasses import replace

    origin = tmp_path / "submission"
    origin.mkdir()
    (origin / "s.py").write_text("ANSWER = 'as handed in'\n")
    work = tmp_path / "work"
    job = replace(_job(tmp_path), module=work / "s.py", origin=origin)
    (work / "s.py").write_text("ANSWER = 'rewritten by the first child'\n")
    (work / "counts.json").write_text("{}")
    second, _merge = follow_up(job, _finished({"0000": np.ones(2)}))
    assert second.module == second.directory / "s.py" and second.directory != work
    assert second.module.read_text() == "ANSWER = 'as handed in'\n"
    assert sorted(p.name for p in second.directory.iterdir()) == ["s.py"]
    # With nothing to copy, no second child (the engine then says the weights were not asked).
    assert follow_up(replace(job, origin=None), _finished({"0000": np.ones(2)})) is None
