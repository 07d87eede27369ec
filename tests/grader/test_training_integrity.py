"""A lab graded by what a model learns gives nothing to a model that did not learn (issue 45):
the three pieces of evidence the child adds to every training case, judged here on answers made
without training, and the hand-built models of every training lab graded in the sandbox (cheap:
they train nothing), each losing the part with the evidence that gave it away."""

import importlib

import keras
import numpy as np
import pytest

from grader.engine.results import FAILED, PartResult
from grader.engine.training import (
    COUNTERFACTUAL,
    MOVED,
    NUDGED,
    REDRAWN,
    RESET,
    UNTRAINED,
    chance,
    from_training,
    not_from_the_inputs,
)
from grader.i18n import speaking
from grader.records import EXERCISES, get_exercise
from grader.sandbox.child import _answers_shuffled, _put_back, _trainable_values
from grader.vocabulary.protocol import CaseOutput
from grader.vocabulary.spec import ALONE, ALONE_ROWS, TRAIN, TRAINING_MODE, Case
from grader.vocabulary.status import CaseStatus
from tests.support.grading import failures
from tests.support.planting import grade_many
from tests.support.training import (
    NOT_FROM_TRAINING,
    NOT_LEARNED,
    SAME_FOR_EVERY_INPUT,
    WHEN,
    plain_positions,
    varied,
)

pytestmark = pytest.mark.labs

TRAINING_LABS = [exercise_id for exercise_id, record in EXERCISES.items() if record.trains]


def _got(right, **evidence):
    """What a child reports: `right` as the trained answer, and the named evidence."""
    return CaseOutput(CaseStatus.OK, output=right, grads={"held_out": right, **evidence})


def test_every_lab_that_trains_has_the_hand_built_models_planted():
    assert set(TRAINING_LABS) == {"train-transformer", "train-memn2n", "train-seq2seq"}
    for exercise_id in TRAINING_LABS:
        module = importlib.import_module(f"tests.grader.test_lab_{exercise_id.replace('-', '_')}")
        mistakes = [planted.mistake for planted in module.planted()]
        # Each way that reads the data, and the attention drawn by rule (the two that never
        # read it answer in plain tokens and lose on the accuracy: test_answer_code.py).
        reads_the_data = [when for when, (_f, _t, phrase) in WHEN.items() if phrase != NOT_LEARNED]
        # The memory network's drawn attention follows the story, so only the training evidence
        # refuses it; the others' are the same for every input, which their gate refuses.
        drawn_by_evidence = exercise_id == "train-memn2n"
        assert mistakes.count(NOT_FROM_TRAINING) == len(reads_the_data) + drawn_by_evidence
        assert any(SAME_FOR_EVERY_INPUT in p.phrases[0] for p in module.planted()) != (
            drawn_by_evidence
        )


def test_chance_is_the_best_answer_per_position_that_reads_no_input():
    truth = np.array([[-1, 3, 1], [-1, 3, 2], [-1, 4, 2], [-1, 3, 2]])
    # Column 1: 3 three times of four; column 2: 2 three times of four.
    assert chance(truth) == pytest.approx(6 / 8)
    assert chance(np.array([5, 5, 6, 7])) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("evidence", "phrase"),
    [
        (UNTRAINED, "the untrained model already answers 100%"),
        (COUNTERFACTUAL, "trained on data whose answers were shuffled between examples"),
        (RESET, "with its trainable weights put back to their values before training"),
        (REDRAWN, "a model built afresh in a process of its own, its weights moved"),
    ],
)
def test_each_piece_of_evidence_alone_refuses_the_answers(evidence, phrase):
    part = get_exercise("train-transformer").part("train")
    truth = np.array([[-1, -1, 1, 2], [-1, -1, 3, 4]] * 10)
    right = np.eye(6)[np.maximum(truth, 0)]
    at_chance = np.eye(6)[np.zeros_like(truth)]
    honest = dict.fromkeys((UNTRAINED, COUNTERFACTUAL, RESET, REDRAWN), at_chance)
    honest[MOVED] = honest[NUDGED] = right
    honest[ALONE] = right[:ALONE_ROWS]
    assert from_training(part, truth, _got(right, **honest)) is None
    with speaking("en"):
        said = from_training(part, truth, _got(right, **{**honest, evidence: right}))
    assert said is not None and phrase in said


def test_answers_that_change_when_asked_one_example_at_a_time_are_refused():
    """A model that answers from the other examples of its batch (in these labs the inputs of a
    batch hold earlier answers in the code, which can be counted across examples) answers
    otherwise when asked an example alone, in a process of its own."""
    part = get_exercise("train-transformer").part("train")
    truth = np.array([[-1, -1, 1, 2], [-1, -1, 3, 4]] * 10)
    right = np.eye(6)[np.maximum(truth, 0)]
    at_chance = np.eye(6)[np.zeros_like(truth)]
    honest = dict.fromkeys((UNTRAINED, COUNTERFACTUAL, RESET, REDRAWN), at_chance)
    honest[MOVED] = honest[NUDGED] = right
    alone = right[:ALONE_ROWS].copy()
    alone[0, 3] = np.eye(6)[0]  # one scored token of 16 differs: a tie broken otherwise
    assert from_training(part, truth, _got(right, **honest, **{ALONE: alone})) is None
    alone[1:4, 2:] = np.eye(6)[0]  # 7 of 16 (56% the same)
    with speaking("en"):
        otherwise = from_training(part, truth, _got(right, **honest, **{ALONE: alone}))
        unasked = from_training(part, truth, _got(right, **honest))
    assert "answer they give in the batch for only 56% of the held-out tokens" in otherwise
    assert "gave no answer when asked one example at a time" in unasked
    # A model that has not learned is told by its accuracy.
    assert from_training(part, truth, _got(at_chance, **honest)) is None


def test_trained_weights_that_answer_nothing_in_a_fresh_model_refuse_the_answers():
    """The trained model passes, but its weights given to a model built afresh do not (what
    it answers is kept outside its weights), or cannot be given (another model each time)."""
    part = get_exercise("train-transformer").part("train")
    truth = np.array([[-1, -1, 1, 2], [-1, -1, 3, 4]] * 10)
    right = np.eye(6)[np.maximum(truth, 0)]
    at_chance = np.eye(6)[np.zeros_like(truth)]
    honest = dict.fromkeys((UNTRAINED, COUNTERFACTUAL, RESET, REDRAWN), at_chance)
    with speaking("en"):
        moved_wrong = from_training(part, truth, _got(right, **honest, **{MOVED: at_chance}))
        not_moved = from_training(part, truth, _got(right, **honest))
        nudged_wrong = from_training(
            part, truth, _got(right, **honest, **{MOVED: right, NUDGED: at_chance})
        )
        no_fresh_model = from_training(
            part, truth, _got(right, **dict.fromkeys((UNTRAINED, COUNTERFACTUAL, RESET), at_chance))
        )
    assert "given to a model build_model made afresh, answer 0%" in moved_wrong
    assert "could not be given to a model build_model made afresh" in not_moved
    assert "with its weights nudged by 1% of their size it answers 0%" in nudged_wrong
    assert "could not ask a model built afresh, in a process of its own" in no_fresh_model
    # A model that has not learned is told by its accuracy, not by where its weights went.
    assert from_training(part, truth, _got(at_chance, **honest)) is None


def test_trained_weights_that_answer_only_at_inference_refuse_the_answers():
    """Called as in training (dropout on, batch statistics), the trained weights must still
    answer: a path that is off while the model trains (a rule keyed by weights train_model
    wrote) was never trained by gradient descent. A model that cannot be called so says
    nothing."""
    part = get_exercise("train-transformer").part("train")
    truth = np.array([[-1, -1, 1, 2], [-1, -1, 3, 4]] * 10)
    right = np.eye(6)[np.maximum(truth, 0)]
    at_chance = np.eye(6)[np.zeros_like(truth)]
    honest = dict.fromkeys((UNTRAINED, COUNTERFACTUAL, RESET, REDRAWN), at_chance)
    fresh = {MOVED: right, NUDGED: right, ALONE: right[:ALONE_ROWS]}
    with speaking("en"):
        only_at_inference = from_training(
            part, truth, _got(right, **honest, **fresh, **{TRAINING_MODE: at_chance})
        )
        in_training_too = from_training(
            part, truth, _got(right, **honest, **fresh, **{TRAINING_MODE: right})
        )
        not_asked = from_training(part, truth, _got(right, **honest, **fresh))
    assert "called as in training (training=True: dropout on, batch statistics)" in (
        only_at_inference
    )
    assert "it answers 0% (chance is" in only_at_inference
    assert in_training_too is None
    assert not_asked is None


class OnlyAtInference(keras.layers.Layer):
    def call(self, inputs, training=None):
        return inputs * 0.0 if training else inputs


def test_the_fresh_child_asks_the_trained_weights_as_in_training():
    from grader.sandbox.child import _ask_in_training

    inputs = keras.Input((3,))
    outputs = OnlyAtInference()(inputs)
    model = keras.Model(inputs, [outputs, outputs])
    asked = np.arange(6, dtype="float32").reshape(2, 3)
    answers = {}
    _ask_in_training(model, asked, answers)
    np.testing.assert_array_equal(answers[TRAINING_MODE], np.zeros((2, 3)))
    np.testing.assert_array_equal(np.asarray(model(asked)[0]), asked)


def test_a_model_that_answers_only_once_trained_is_judged_on_the_rest():
    part = get_exercise("train-memn2n").part("train")
    truth = np.arange(20) % 5 + 5
    right, wrong = np.eye(11)[truth], np.eye(11)[np.zeros_like(truth)]
    rest = {COUNTERFACTUAL: wrong, RESET: wrong, REDRAWN: wrong, MOVED: right, NUDGED: right}
    rest[ALONE] = right[:ALONE_ROWS]
    assert from_training(part, truth, _got(right, **rest)) is None
    # The two that every child reports cannot be missing: a child that leaves them out is refused.
    assert from_training(part, truth, _got(right, **{COUNTERFACTUAL: wrong})) is not None
    # Halfway between chance (20%) and the pass mark (85%), 52.5%, is the most the evidence may
    # reach: 10 of 20 right is no evidence, 11 of 20 is.
    for right_count, refused in ((10, False), (11, True)):
        partly = np.eye(11)[np.where(np.arange(20) < right_count, truth, 0)]
        said = from_training(part, truth, _got(right, **{**rest, COUNTERFACTUAL: partly}))
        assert (said is not None) == refused


def test_the_shuffled_data_keeps_the_inputs_and_answers_but_not_their_pairs():
    inputs = np.arange(4000).reshape(2000, 2)
    targets = np.arange(2000) * 10
    case = Case("build_model", TRAIN, "toy", {"inputs": inputs, "targets": targets}, {})
    shuffled_inputs, shuffled_targets = _answers_shuffled(case, 3)
    assert len(shuffled_inputs) == 256 and len(np.unique(shuffled_inputs[:, 0])) == 256
    assert set(shuffled_targets) <= set(targets)
    paired = shuffled_targets == shuffled_inputs[:, 0] * 5
    assert not paired.any()
    assert sorted(shuffled_targets // 10) == sorted(shuffled_inputs[:, 0] // 2)


def test_putting_back_gives_each_weight_its_first_value_and_a_new_one_zeros():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    first = [value.copy() for _variable, value in _trainable_values(model)]
    initial = _trainable_values(model)
    for variable in model.trainable_variables:
        variable.assign(variable.numpy() + 1.0)
    _put_back(model, initial)
    now = [variable.numpy() for variable in model.trainable_variables]
    assert all(np.array_equal(v, f) for v, f in zip(now, first, strict=True))
    # A model whose weights are made by its first call in training: they were not there before.
    lazy = keras.Sequential([keras.layers.Dense(2)])
    initial = _trainable_values(lazy)
    lazy(np.ones((1, 3)))
    assert initial == [] and any(np.any(v.numpy()) for v in lazy.trainable_variables)
    _put_back(lazy, initial)
    assert not any(np.any(v.numpy()) for v in lazy.trainable_variables)
    # A layer its training made non-trainable (so that a put-back of what is trainable now
    # would skip it) is put back too.
    frozen = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    initial = _trainable_values(frozen)
    first = [value.copy() for _variable, value in initial]
    for variable in frozen.trainable_variables:
        variable.assign(variable.numpy() + 1.0)
    frozen.layers[0].trainable = False
    _put_back(frozen, initial)
    now = [variable.numpy() for variable in frozen.weights]
    assert all(np.array_equal(v, f) for v, f in zip(now, first, strict=True))


@pytest.mark.parametrize("exercise_id", TRAINING_LABS)
def test_hand_built_models_lose_the_part_with_what_gave_them_away(exercise_id, tmp_path):
    module = importlib.import_module(f"tests.grader.test_lab_{exercise_id.replace('-', '_')}")
    table = [p for p in module.planted() if p.mistake == NOT_FROM_TRAINING]
    # Their rules read the source where the task puts it (a position code makes them lose on
    # the accuracy instead: test_position_code.py).
    with speaking("en"), plain_positions():
        results = grade_many(
            exercise_id, {str(i): (p.source, ["train"]) for i, p in enumerate(table)}, tmp_path
        )
    for index, planted in enumerate(table):
        part: PartResult = results[str(index)].part("train")
        messages = [check.message for check in failures(part)]
        assert part.status == FAILED and part.score == 0.0, (index, part.status, messages)
        assert planted.mistake in part.mistakes
        assert len(messages) == 1 and planted.phrases[0] in messages[0], messages


def test_the_grader_reads_the_models_outputs_never_the_students_predict():
    """predict() and attention_weights() are the student's to edit: answering by rule there
    (always, or once train_model set a flag) must not reach the grader, which asks the model."""
    import types

    from grader.engine.cases import make_cases
    from grader.instructor.course.stubs import package_dir
    from grader.reference import tasks
    from grader.sandbox.child import _run_training
    from grader.sandbox.child import load_submission as load

    record = get_exercise("train-transformer")
    solution = load(str(package_dir("solutions") / record.file), "honest_reversal")
    module = types.ModuleType("cheat")
    module.__dict__.update(vars(solution))
    module.train_model = lambda model, inputs, targets: None

    def predict(model, inputs):
        return np.eye(12)[np.maximum(tasks.reversal_answers(inputs), 0)]

    module.predict = predict
    case = make_cases(record, 0)["train"][0]
    output, answers = _run_training(module, case, "cheat.py")
    truth = tasks.reversal_answers(case.inputs["held_out"])
    from grader.engine.training import accuracy

    assert accuracy(output, truth) < 0.5  # the untrained model's, not the rule's 100%


def test_attention_the_same_for_every_input_is_refused_unless_spread_evenly():
    """A table of weights (here a date alignment drawn once) is the same for every input: not
    computed from it. Weights spread evenly over the keys are left to the gates that say what
    such scores miss, and weights that differ between inputs, however little, pass."""
    alignment = np.eye(7)[[0, 1, 2, 2, 3, 4, 5, 6]]
    table = np.broadcast_to(alignment, (50, 8, 7))
    with speaking("en"):
        refused = not_from_the_inputs(table)
    assert refused is not None and SAME_FOR_EVERY_INPUT in refused.message
    assert not refused.needs_learning  # named as the mistake it is, trained or not
    assert not_from_the_inputs(np.full((50, 8, 7), 1 / 7)) is None
    causal = np.tril(np.ones((6, 6))) / np.arange(1, 7)[:, None]
    assert not_from_the_inputs(np.broadcast_to(causal, (50, 1, 6, 6))) is None
    # The same with its source keys read back from a rotation (its first rows weigh no prefix).
    rotated = np.broadcast_to(causal[:, [1, 2, 0, 3, 4, 5]], (50, 1, 6, 6))
    assert not_from_the_inputs(rotated) is None
    assert not_from_the_inputs(varied(table)) is None


def test_every_stage_of_answers_the_fresh_child_reports_is_read_back_from_the_code():
    """A stage whose answers stay in the grader's answer code is judged against the task's
    plain tokens and looks wrong (the stage asked as in training read 0% for honest models
    until it was listed)."""
    from grader.engine.fresh_models import FRESH_STAGES
    from grader.engine.training import STAGES
    from grader.vocabulary.spec import RELEARN_CHANGES, RELEARN_FAILED

    assert set(FRESH_STAGES) - {RELEARN_CHANGES, RELEARN_FAILED} <= set(STAGES)
