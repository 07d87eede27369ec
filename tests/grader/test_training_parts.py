"""The mechanism of the labs graded by what a model learns, without training anything: what the
child calls and returns for a case of kind "train", how the grader scores the answers, and that
the reference solution is never run for such a case."""

import types

import numpy as np
import pytest

from grader.engine.references import LiveReference
from grader.engine.training import accuracy, plain_view, predicted_tokens
from grader.instructor.course.stubs import package_dir
from grader.records import get_exercise
from grader.sandbox.child import _run_training
from grader.vocabulary.bundle import cases_from_bundle, cases_to_bundle
from grader.vocabulary.spec import TRAIN, Case

PLAN = {
    "build": "build_model",
    "train": "train_model",
    "seed": 7,
    "probes": [["first", "predict", "held_out"], ["twice", "predict_twice", "held_out"]],
}


def _case():
    inputs = {
        "inputs": np.arange(6).reshape(3, 2),
        "targets": np.arange(3),
        "held_out": np.array([[1, 2], [3, 4]]),
    }
    return Case("build_model", TRAIN, "toy", inputs, {"width": 2}, training=PLAN)


def _submission(calls):
    """A submission whose "model" is a dict: trained by remembering the targets' sum, it
    answers the probes from it; every call is logged in `calls`."""
    module = types.ModuleType("toy")

    def build_model(width):
        import keras

        calls.append(("build", width, float(keras.random.uniform(()))))
        return {"width": width}

    def train_model(model, inputs, targets):
        calls.append(("train", inputs.shape, targets.shape))
        model["bias"] = int(targets.sum())

    def predict(model, inputs):
        calls.append(("predict", inputs.tolist()))
        answer = inputs + model["bias"]
        inputs[...] = -1  # a later probe of the same input is given it as the grader made it
        return answer

    def predict_twice(model, inputs):
        return 2 * predict(model, inputs)

    module.__dict__.update(
        build_model=build_model,
        train_model=train_model,
        predict=predict,
        predict_twice=predict_twice,
    )
    return module


def test_the_child_builds_trains_then_answers_every_probe_by_name():
    calls = []
    output, answers = _run_training(_submission(calls), _case(), "toy.py")
    # First a fresh model trained on the answers shuffled (the check that answers come from
    # training), asked every probe; then the model itself: asked before training (this one
    # cannot answer yet: no bias), trained, asked every probe, then asked again with its
    # trainable weights put back (a dict has none). A model built afresh is asked in another
    # process (grader.engine.fresh_models), with the trained weights this one reports (a dict
    # has none). predict_twice calls predict.
    names = [call[0] for call in calls]
    assert names == (
        ["build", "train", "predict", "predict", "build", "predict", "train"] + ["predict"] * 4
    )
    assert calls[0][1] == calls[4][1] == 2 and calls[6][1:] == ((3, 2), (3,))
    assert np.array_equal(output, [[4, 5], [6, 7]])  # the first probe's answer, bias 0+1+2
    assert {"first", "twice", "trained_on_shuffled", "weights_reset"} <= set(answers)
    assert "untrained" not in answers  # no evidence, and no failure
    assert not [name for name in answers if name.startswith(("fresh_", "weights_moved"))]
    assert not [name for name in answers if name.startswith("trained_weights/")]
    assert np.array_equal(answers["twice"], 2 * output)
    assert calls[8][1] == calls[7][1] == [[1, 2], [3, 4]]


def test_the_child_seeds_keras_so_a_seed_gives_the_same_model():
    first, again, other = [], [], []
    _run_training(_submission(first), _case(), "toy.py")
    _run_training(_submission(again), _case(), "toy.py")
    changed = _case()
    changed.training = dict(PLAN, seed=8)
    _run_training(_submission(other), changed, "toy.py")
    assert first[0][2] == again[0][2] != other[0][2]


def test_a_missing_function_is_named():
    module = _submission([])
    del module.predict_twice
    with pytest.raises(Exception, match="predict_twice"):
        _run_training(module, _case(), "toy.py")


def test_the_plan_travels_in_the_case_bundle():
    described, arrays = cases_to_bundle([_case()])
    assert cases_from_bundle(described, arrays)[0].training == PLAN


def test_accuracy_counts_the_scored_positions_of_scores_or_tokens():
    truth = np.array([[-1, 2, 0], [-1, 1, 1]])
    scores = np.eye(3)[[[0, 2, 0], [2, 1, 2]]]  # right, right; right, wrong
    assert accuracy(scores, truth) == 0.75
    assert accuracy(np.array([[9, 2, 0], [9, 1, 1]]), truth) == 1.0
    assert "shape" in accuracy(np.zeros((2, 4)), truth)
    assert "NaN" in predicted_tokens(np.full((2, 3, 3), np.nan), truth)


def test_the_reference_solution_is_not_run_for_a_training_lab(tmp_path):
    record = get_exercise("train-transformer")
    reference = LiveReference(package_dir("solutions"))
    cases = reference.cases(record, 0)
    assert reference.job(record, 0, tmp_path, cases) is None
    expected = reference.expected(record, 0, cases, None)["train"][0]
    # The source as the task orders it (the data holds it rotated: Case.position_code).
    held_out = plain_view(cases["train"][0]).inputs["held_out"]
    assert np.array_equal(expected.output[:, 6:], held_out[:, :6][:, ::-1])
    assert (expected.output[:, :6] == -1).all()
