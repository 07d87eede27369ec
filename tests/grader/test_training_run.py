"""A model that has not learned is told what its run shows (grader.engine.training_run): each
rule planted on answers made here without training, on each lab's own cases, and the line the
student reads first checked for its words."""

import numpy as np
import pytest

from grader.engine.feedback import problems
from grader.engine.judging import judge_case
from grader.engine.results import FAILED, PartResult
from grader.engine.training import expected_output
from grader.engine.training_run import fits_asked
from grader.i18n import speaking
from grader.records import get_exercise
from grader.vocabulary.protocol import CaseOutput
from grader.vocabulary.spec import RUN_FIT, RUN_LOSS, RUN_MOVED
from grader.vocabulary.status import CaseStatus
from tests.support.training import plain_case, untrained_evidence

pytestmark = pytest.mark.labs

LABS = ("train-transformer", "train-memn2n", "train-seq2seq")
VOCABULARY = {"train-transformer": 12, "train-memn2n": 11, "train-seq2seq": 22}


def _scores(tokens, vocabulary):
    return np.eye(vocabulary)[np.maximum(tokens, 0)]


def _case(lab):
    return plain_case(lab)


def _wrong(truth):
    """Answers that are never the right ones, off by 1, 2 or 3 tokens in turn (0% right, and no
    one offset in them)."""
    offsets = 1 + np.arange(truth.size).reshape(truth.shape) % 3
    wrong = (truth + offsets) % (truth.max() + 1)
    return np.where(truth >= 0, np.where(wrong == truth, (wrong + 1) % (truth.max() + 1), wrong), 0)


def _partly(truth, share=0.4):
    """The right answers in the first `share` of the examples, wrong ones in the rest: a model
    that learned some of the task."""
    tokens = _wrong(truth)
    count = int(len(truth) * share)
    tokens[:count] = truth[:count]
    return tokens


def _accuracy_line(lab, case, answers, loss=None, moved=None, fits=None):
    """The accuracy's message when the part is graded on these answers (in English)."""
    part = get_exercise(lab).part("train")
    vocabulary = VOCABULARY[lab]
    held_out = answers["held_out"]
    grads = {**untrained_evidence(held_out), **answers}
    for name in ("later_changed", "reordered", "moved"):
        grads.setdefault(name, held_out)
    if loss is not None:
        grads[RUN_LOSS] = np.asarray(loss, dtype=float)
    if moved is not None:
        grads[RUN_MOVED] = np.asarray([moved], dtype=float)
    if fits is not None:
        grads[RUN_FIT] = np.asarray(fits, dtype=float)
    got = CaseOutput(CaseStatus.OK, output=held_out, grads=grads)
    with speaking("en"):
        checks = judge_case(part, case, expected_output(part, case), got)
    accuracy = [check for check in checks if "accuracy on held-out" in check.name]
    assert accuracy and not accuracy[0].passed, [c.message for c in checks]
    del vocabulary
    return accuracy[0].message


def _answers(lab, case, held_tokens, shuffled_tokens=None, training_tokens=None):
    part = get_exercise(lab).part("train")
    vocabulary = VOCABULARY[lab]
    truth_rows = part.training.truth(case.inputs["training_rows"])
    answers = {
        "held_out": _scores(held_tokens, vocabulary),
        "source_shuffled": _scores(
            _wrong(part.training.truth(case.inputs["source_shuffled"]))
            if shuffled_tokens is None
            else shuffled_tokens,
            vocabulary,
        ),
        "training_rows": _scores(
            _wrong(truth_rows) if training_tokens is None else training_tokens, vocabulary
        ),
    }
    return answers


@pytest.mark.parametrize("lab", LABS)
def test_answers_that_do_not_move_with_the_source_say_it_is_not_read(lab):
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    constant = np.where(truth >= 0, 1 if lab != "train-memn2n" else 5, 0)
    answers = _answers(lab, case, constant, shuffled_tokens=constant)
    said = _accuracy_line(lab, case, answers, loss=[2.0, 1.9, 1.89])
    word = {"train-transformer": "source sequence", "train-memn2n": "story"}.get(lab, "source date")
    assert f"the model does not read the {word}" in said, said


@pytest.mark.parametrize("lab", ["train-seq2seq", "train-transformer"])
def test_some_positions_fitted_and_others_at_chance_point_at_the_loss_weighting(lab):
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    scored_columns = [c for c in range(truth.shape[1]) if (truth[:, c] >= 0).any()]
    half = scored_columns[: len(scored_columns) // 2]
    tokens = _wrong(truth)
    tokens[:, half] = truth[:, half]
    said = _accuracy_line(lab, case, _answers(lab, case, tokens), loss=[2.0, 1.0, 0.99])
    assert "the loss reaches only some answer positions" in said, said
    assert said.split("The answers at positions ")[1].startswith(", ".join(map(str, half)))


@pytest.mark.parametrize(
    ("loss", "phrase"),
    [
        ([2.3, 1.9, 1.5], "still falling when the training stopped (1.9 → 1.5 in the last of 3"),
        ([2.3], "trained for one epoch only"),
        ([2.30, 2.29, 2.29], "barely moved (2.3 → 2.29 over 3 epochs)"),
        ([2.3, float("nan")], "diverged: its loss became nan at epoch 2"),
    ],
)
def test_the_loss_of_each_epoch_tells_too_little_training_a_stuck_one_or_a_divergence(loss, phrase):
    lab = "train-memn2n"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    said = _accuracy_line(lab, case, _answers(lab, case, _partly(truth)), loss=loss)
    assert phrase in said, said


def test_training_rows_fitted_and_held_out_ones_not_say_it_memorised():
    lab = "train-memn2n"
    case = _case(lab)
    part = get_exercise(lab).part("train")
    truth = part.training.answers(case)
    fitted = part.training.truth(case.inputs["training_rows"])
    answers = _answers(lab, case, _wrong(truth), training_tokens=fitted)
    said = _accuracy_line(lab, case, answers, loss=[2.0, 0.5, 0.495])
    assert "it learned its training examples by heart" in said, said


def test_without_evidence_the_causes_are_listed():
    lab = "train-memn2n"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    said = _accuracy_line(lab, case, _answers(lab, case, _wrong(truth)))  # no loss: own loop
    assert "The cause is in the model" in said and "the gates below tell" in said


def test_a_loss_that_is_not_numbers_is_not_read():
    lab = "train-memn2n"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    answers = _answers(lab, case, _wrong(truth))
    part = get_exercise(lab).part("train")
    grads = {**untrained_evidence(answers["held_out"], answers), **answers}
    grads.update(moved=answers["held_out"], reordered=answers["held_out"])
    grads[RUN_LOSS] = np.array([[1.0, 2.0]])  # not one loss per epoch
    got = CaseOutput(CaseStatus.OK, output=answers["held_out"], grads=grads)
    with speaking("en"):
        checks = judge_case(part, case, expected_output(part, case), got)
    result = PartResult("train", 10, FAILED, checks)
    assert any("The cause is in the model" in check.message for check in problems(result))


def test_the_diagnosis_speaks_chinese_too():
    lab = "train-memn2n"
    case = _case(lab)
    part = get_exercise(lab).part("train")
    truth = part.training.answers(case)
    answers = _answers(lab, case, _wrong(truth))
    grads = {**untrained_evidence(answers["held_out"], answers), **answers}
    grads.update(moved=answers["held_out"], reordered=answers["held_out"])
    grads[RUN_LOSS] = np.array([2.3, 1.9, 1.5])
    answers = _answers(lab, case, _partly(truth))
    grads.update(answers)
    got = CaseOutput(CaseStatus.OK, output=answers["held_out"], grads=grads)
    with speaking("zh"):
        checks = judge_case(part, case, expected_output(part, case), got)
    said = next(c.message for c in checks if not c.passed and "1.9" in c.message)
    assert "1.9" in said and not any(word in said for word in ("still falling", "epochs"))


@pytest.mark.parametrize("lab", ["train-seq2seq", "train-transformer"])
def test_answers_that_are_the_neighbours_say_the_targets_are_shifted(lab):
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    tokens = _wrong(truth)
    tokens[:, :-1] = np.where(truth[:, 1:] >= 0, truth[:, 1:], tokens[:, :-1])
    said = _accuracy_line(lab, case, _answers(lab, case, tokens), loss=[2.0, 0.01, 0.0003])
    assert "the right answer of the position after it" in said, said
    assert "still falling" not in said  # a loss near zero fits its targets


def test_a_loss_that_fell_while_the_answers_stay_at_chance_says_it_learned_something_else():
    lab = "train-transformer"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    said = _accuracy_line(lab, case, _answers(lab, case, _wrong(truth)), loss=[2.4, 1.2, 1.19])
    assert "what it fitted is not the answers" in said, said


def test_training_rows_fitted_wins_over_a_split_of_positions():
    """Trained on a slice of the data: some positions fit on held-out rows, but every position
    fits on the rows it trained on, so what it lacked is data, not a loss on every position."""
    lab = "train-seq2seq"
    case = _case(lab)
    part = get_exercise(lab).part("train")
    truth = part.training.answers(case)
    tokens = _wrong(truth)
    tokens[:, :3] = truth[:, :3]
    fitted = part.training.truth(case.inputs["training_rows"])
    answers = _answers(lab, case, tokens, training_tokens=fitted)
    said = _accuracy_line(lab, case, answers, loss=[2.0, 0.3, 0.29])
    assert "learned its training examples by heart" in said and "too few of them" in said


def test_a_loss_that_converged_with_nothing_memorised_points_at_the_model():
    lab = "train-memn2n"
    case = _case(lab)
    part = get_exercise(lab).part("train")
    truth = part.training.answers(case)
    rows_truth = part.training.truth(case.inputs["training_rows"])
    answers = _answers(lab, case, _partly(truth, 0.6), training_tokens=_partly(rows_truth, 0.62))
    said = _accuracy_line(lab, case, answers, loss=[2.0, 1.0, 0.8, 0.799])
    assert "more training will not help" in said, said


def test_weights_that_barely_moved_say_the_model_was_not_trained_before_anything_else():
    """Too small a learning rate: the weights moved 3%; the source looks unread too (an
    untrained model reads little of it), which is no evidence of a model that cannot read it."""
    lab = "train-seq2seq"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    constant = np.where(truth >= 0, 1, 0)
    answers = _answers(lab, case, constant, shuffled_tokens=constant)
    said = _accuracy_line(lab, case, answers, loss=[3.07, 2.95, 2.84], moved=0.03)
    assert said.startswith("Its weights barely moved in training (by 3.0% of their size)"), said


@pytest.mark.parametrize(
    ("moved", "phrase"),
    [(1.2, "the model cannot fit these targets"), (None, "the learning rate may be far too small")],
)
def test_a_flat_loss_with_weights_that_moved_points_at_the_targets_or_the_model(moved, phrase):
    lab = "train-memn2n"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    answers = _answers(lab, case, _partly(truth, 0.2))
    said = _accuracy_line(lab, case, answers, loss=[1.84, 1.79, 1.79], moved=moved)
    assert phrase in said, said


def test_positions_split_while_the_loss_still_falls_names_no_loss_weighting():
    lab = "train-seq2seq"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    tokens = _wrong(truth)
    tokens[:, :3] = truth[:, :3]
    said = _accuracy_line(lab, case, _answers(lab, case, tokens), loss=[2.0, 1.4, 1.0], moved=0.9)
    assert "only some answer positions" not in said and "still falling" in said, said


def test_answers_moved_by_one_token_say_the_labels_were_changed():
    """Labels made "0-based" by subtracting one: the model answers the right token − 1."""
    lab = "train-memn2n"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    said = _accuracy_line(lab, case, _answers(lab, case, truth - 1), loss=[2.0, 0.06, 0.058])
    assert said.startswith("Its answers are the right tokens -1 in 100%"), said


def test_a_loss_that_falls_slowly_and_steadily_is_still_falling():
    """A learning rate far too small: each epoch takes off a little, the last as much as the
    others; that is not a training that converged."""
    lab = "train-memn2n"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    loss = list(np.linspace(2.4, 2.21, 12))
    said = _accuracy_line(lab, case, _answers(lab, case, _partly(truth, 0.2)), loss=loss, moved=0.6)
    assert "fell slowly and steadily" in said and "Raise the learning rate" in said, said
    assert "converged" not in said


def test_a_training_that_diverged_names_no_gate_mistake():
    """Diverged: the attention comes back as rows of zeros, which a gate would read as scores
    returned before the softmax; the divergence is what the student reads first."""
    lab = "train-transformer"
    case = _case(lab)
    part = get_exercise(lab).part("train")
    truth = part.training.answers(case)
    answers = _answers(lab, case, _wrong(truth))
    count, length = case.inputs["held_out"].shape
    grads = {**untrained_evidence(answers["held_out"], answers), **answers}
    grads.update(later_changed=answers["held_out"], reordered=answers["held_out"])
    grads["attention"] = np.zeros((count, 1, length, length))
    grads[RUN_LOSS] = np.array([2.4, float("inf")])
    got = CaseOutput(CaseStatus.OK, output=answers["held_out"], grads=grads)
    with speaking("en"):
        checks = judge_case(part, case, expected_output(part, case), got)
    first = problems(PartResult("train", 10, FAILED, checks))[0]
    assert first.message.startswith("The training diverged"), first.message


def test_a_split_of_positions_with_a_loss_near_zero_points_at_the_weighting():
    """Sample weights that skip the first answer position: the loss falls to about zero on the
    positions it weighs (relatively still falling, 1e-4 → 5e-5), while that one stays at chance."""
    lab = "train-transformer"
    case = _case(lab)
    part = get_exercise(lab).part("train")
    truth = part.training.answers(case)
    first = truth.shape[1] // 2
    tokens = truth.copy()
    tokens[:, first] = _wrong(truth)[:, first]
    rows_truth = part.training.truth(case.inputs["training_rows"])
    on_rows = rows_truth.copy()
    on_rows[:, first] = _wrong(rows_truth)[:, first]
    answers = _answers(lab, case, tokens, training_tokens=on_rows)
    said = _accuracy_line(lab, case, answers, loss=[0.86, 0.05, 1e-4, 5e-5], moved=2.8)
    assert f"those at positions {first} stay nearer chance" in said, said


def test_a_loss_that_grew_says_the_training_diverged_and_names_no_gate():
    """A learning rate of 1: the loss ends above where it began, finite; the attention comes
    back as rows of zeros, which is no gate's mistake."""
    lab = "train-transformer"
    case = _case(lab)
    part = get_exercise(lab).part("train")
    truth = part.training.answers(case)
    answers = _answers(lab, case, _wrong(truth))
    count, length = case.inputs["held_out"].shape
    grads = {**untrained_evidence(answers["held_out"], answers), **answers}
    grads.update(later_changed=answers["held_out"], reordered=answers["held_out"])
    grads["attention"] = np.zeros((count, 1, length, length))
    grads[RUN_LOSS] = np.array([2.4, 9.0, 14.5])
    got = CaseOutput(CaseStatus.OK, output=answers["held_out"], grads=grads)
    with speaking("en"):
        checks = judge_case(part, case, expected_output(part, case), got)
    first = problems(PartResult("train", 10, FAILED, checks))[0]
    assert first.message.startswith("The training diverged: its loss grew"), first.message


def test_a_first_epoch_far_above_a_guess_says_the_steps_threw_the_weights_off():
    """A learning rate of 1: the first epoch's loss at 120 where a guess's is ln 11; the loss
    then settles near a guess's, which alone would read as a model that cannot learn."""
    lab = "train-memn2n"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    said = _accuracy_line(
        lab, case, _answers(lab, case, _partly(truth, 0.3)), loss=[120.0, 1.9, 1.72, 1.72]
    )
    assert said.startswith("Its loss began at 120 in its first epoch, far above the 2.4"), said
    assert "Lower the learning rate" in said


@pytest.mark.parametrize("lab", LABS)
def test_a_fit_on_a_share_of_the_examples_says_how_many_it_trained_on(lab):
    """A validation_split of 0.9, or a slice left from debugging: the run is otherwise one of a
    model still learning, or of one that learned its few examples by heart."""
    case = _case(lab)
    part = get_exercise(lab).part("train")
    truth = part.training.answers(case)
    fitted = part.training.truth(case.inputs["training_rows"])
    given = len(case.inputs["inputs"])
    answers = _answers(lab, case, _partly(truth, 0.5), training_tokens=fitted)
    said = _accuracy_line(
        lab, case, answers, loss=[2.0, 1.0, 0.8], fits=[[given // 10, 64, 10, 1, 0, 1]], moved=1.0
    )
    assert said.startswith(f"Its fit trained on {given // 10} of the {given} training"), said
    assert "validation_split" in said


def test_a_handful_of_steps_says_how_few_and_asks_for_mini_batches():
    lab = "train-seq2seq"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    given = len(case.inputs["inputs"])
    said = _accuracy_line(
        lab,
        case,
        _answers(lab, case, _partly(truth, 0.2)),
        loss=[2.68, 2.4, 2.2],
        fits=[[given, given, 3, 1, 0, 1]],
        moved=0.3,
    )
    assert said.startswith("It took only 3 optimisation steps in all (3 epochs, 1 per epoch"), said
    assert "batch_size" in said


def test_a_fit_of_all_the_examples_in_mini_batches_is_not_told_about_its_data():
    """The reference's own fit: neither rule on the data or the steps applies, the loss tells."""
    lab = "train-memn2n"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    given = len(case.inputs["inputs"])
    said = _accuracy_line(
        lab,
        case,
        _answers(lab, case, _partly(truth)),
        loss=[2.3, 1.9, 1.5],
        fits=[[given, 64, 12, 1, 0, 1]],
        moved=1.0,
    )
    assert "still falling" in said, said
    assert "training examples train_model was given" not in said
    assert "optimisation steps" not in said


def test_fits_that_are_not_rows_of_three_numbers_are_not_read():
    assert fits_asked({RUN_FIT: np.array([[5000.0, 64.0, 12.0, 1.0, 0.0, np.nan]])}) is not None
    for fits in (
        [[10.0, 64.0, 1.0]],
        [[-5.0, 64.0, 12.0, 1.0, 0.0, 1.0]],
        [["10", "64", "1", "1", "0", "1"]],
        [10.0, 64.0, 1.0, 1.0, 0.0, 1.0],
    ):
        assert fits_asked({RUN_FIT: np.array(fits)}) is None, fits


@pytest.mark.parametrize("lab", LABS)
def test_scores_where_probabilities_are_asked_say_the_output_needs_a_softmax(lab):
    """An output without its softmax under Keras's default loss for probabilities: whatever
    else the run shows (here, answers that do not move with the source), the output is told."""
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    answers = _answers(lab, case, _partly(truth, 0.3))
    answers["held_out"] = answers["held_out"] * 6.0 - 2.0  # scores, not probabilities
    said = _accuracy_line(lab, case, answers, loss=[2.0, 1.9, 1.89], moved=1.0)
    assert said.startswith("Its first output is not probabilities (a row sums to"), said
    assert "end the model with a softmax" in said


def test_a_fit_of_another_model_says_the_graded_one_was_never_trained():
    """build_model called again inside train_model: the fit ran, on a model holding none of the
    given model's weights, which did not move."""
    lab = "train-transformer"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    given = len(case.inputs["inputs"])
    said = _accuracy_line(
        lab,
        case,
        _answers(lab, case, _wrong(truth)),
        loss=[2.3, 1.2, 0.4],
        fits=[[given, 64, 10, 0, 0, 1]],
        moved=0.0,
    )
    assert said.startswith("train_model's fit trained a model that holds none of the"), said


def test_weight_arrays_made_untrainable_are_told_with_their_count():
    from grader.vocabulary.spec import RUN_FROZEN

    lab = "train-transformer"
    case = _case(lab)
    part = get_exercise(lab).part("train")
    truth = part.training.answers(case)
    answers = _answers(lab, case, _partly(truth, 0.2))
    answers[RUN_FROZEN] = np.array([9.0, 11.0])
    said = _accuracy_line(lab, case, answers, loss=[2.0, 1.2, 1.19], moved=0.4)
    assert said.startswith("train_model made 9 of the model's 11 trainable weight arrays"), said
    answers[RUN_FROZEN] = np.array([1.0, 11.0])  # an embedding kept frozen: not told
    said = _accuracy_line(lab, case, answers, loss=[2.0, 1.2, 1.19], moved=0.4)
    assert "untrainable" not in said, said


def test_targets_apart_from_their_inputs_in_the_fit_are_told_with_their_share():
    lab = "train-memn2n"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    given = len(case.inputs["inputs"])
    said = _accuracy_line(
        lab,
        case,
        _answers(lab, case, _partly(truth, 0.3)),
        loss=[1.85, 1.79, 1.78],
        fits=[[given, 64, 12, 1, 0, 0.17]],
        moved=2.5,
    )
    assert said.startswith("For 83% of the examples its fit trained on, the target is not"), said


def test_a_flat_loss_under_sample_weights_points_at_the_weights():
    lab = "train-transformer"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    given = len(case.inputs["inputs"])
    said = _accuracy_line(
        lab,
        case,
        _answers(lab, case, _partly(truth, 0.1)),
        loss=[1.04, 1.0, 0.992],
        fits=[[given, 64, 10, 1, 1, 1]],
        moved=1.1,
    )
    assert "The sample_weight of its fit may sit on positions" in said, said


def test_answers_that_do_not_move_with_the_question_say_it_is_not_read():
    """A question read from the padding column: the story is read (answers move with it), the
    person asked is not."""
    from grader.vocabulary.spec import QUERY_SHUFFLED

    lab = "train-memn2n"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    tokens = _partly(truth, 0.3)
    answers = _answers(lab, case, tokens)
    answers[QUERY_SHUFFLED] = answers["held_out"]
    said = _accuracy_line(lab, case, answers, loss=[1.8, 1.3, 1.29], moved=1.0)
    assert said.startswith(
        "The question does not reach the answer: the answers stayed the same in 100%"
    ), said
    assert "Either the model does not read it" in said
    answers[QUERY_SHUFFLED] = _answers(lab, case, _wrong(truth))["held_out"]  # they move
    said = _accuracy_line(lab, case, answers, loss=[1.8, 1.3, 1.29], moved=1.0)
    assert "does not reach the answer" not in said, said


def test_attention_that_does_not_move_with_the_question_names_the_attentions_scores():
    """Attention weights the same whether or not the person asked is swapped: the scores do
    not read the question (p_i from the memories alone), whatever the answers do."""
    from grader.vocabulary.spec import QUERY_SHUFFLED, QUERY_SHUFFLED_ATTENTION

    lab = "train-memn2n"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    answers = _answers(lab, case, _partly(truth, 0.3))
    answers[QUERY_SHUFFLED] = _answers(lab, case, _wrong(truth))["held_out"]  # answers move
    count, facts = len(case.inputs["held_out"]), case.inputs["held_out"].shape[1] - 1
    attention = np.random.default_rng(0).dirichlet(np.ones(facts), count)
    answers["attention"] = attention
    answers[QUERY_SHUFFLED_ATTENTION] = attention.copy()
    said = _accuracy_line(lab, case, answers, loss=[1.8, 1.3, 1.29], moved=1.0)
    assert said.startswith("Its attention does not read the question"), said
    # Weights that move with the question are not told so.
    answers[QUERY_SHUFFLED_ATTENTION] = attention[::-1].copy()
    said = _accuracy_line(lab, case, answers, loss=[1.8, 1.3, 1.29], moved=1.0)
    assert "attention does not read" not in said, said


@pytest.mark.parametrize(
    ("epochs", "phrase"),
    [(3, "This model learns more slowly than the lab's"), (2, "it needs more training")],
)
def test_a_loss_still_falling_after_the_labs_own_epochs_points_at_the_model(epochs, phrase):
    """A score without its tanh trains slower than the lab's model: after the 3 epochs that
    train the lab's own, "train more" would hide it; after 2, too little training it is."""
    lab = "train-seq2seq"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    given = len(case.inputs["inputs"])
    said = _accuracy_line(
        lab,
        case,
        _answers(lab, case, _partly(truth, 0.5)),
        loss=[2.3, 1.9, 1.5][:epochs],
        fits=[[given, 64, epochs, 1, 0, 1]],
        moved=1.0,
    )
    assert phrase in said, said


def test_an_early_stop_before_the_labs_epochs_is_told_as_too_little_training():
    """EarlyStopping that ends a 12-epoch fit after 3: the loss still falls; the epochs that
    ran, not those asked, are compared with the lab's own."""
    lab = "train-memn2n"
    case = _case(lab)
    truth = get_exercise(lab).part("train").training.answers(case)
    given = len(case.inputs["inputs"])
    said = _accuracy_line(
        lab,
        case,
        _answers(lab, case, _partly(truth, 0.5)),
        loss=[0.9, 0.441, 0.333],
        fits=[[given, 64, 12, 1, 0, 1]],
        moved=1.0,
    )
    assert said.startswith("Its training loss was still falling when the training stopped"), said
