"""Lab train-seq2seq: its gates on answers made here (no training), and the planted table of
models that break a gate, each of which must lose the part with the gate's explanation. Full
marks, the stub and the planted table are graded by tests/grader/test_records.py (marked slow
there: each graded submission trains a model in the sandbox, about 13 s of one CPU core)."""

import numpy as np
import pytest

from grader.engine.training import accuracy
from grader.records import get_exercise
from grader.records.lab_train_seq2seq import causal, monotone_alignment, query_knows_the_step
from grader.reference import tasks
from grader.vocabulary.spec import RUN_MOVED, SOURCE_SHUFFLED
from tests.support.planting import from_table, patched_solution
from tests.support.training import not_learned_table, plain_case, varied

pytestmark = pytest.mark.labs

LAB = "train-seq2seq"
DECODER = "    states = layers.GRU(units, return_sequences=True)(\n"

# (part, mistake, the phrases of the feedback, (old, new) patches of the solution)
PATCHES = [
    (
        # A decoder that reads its inputs both ways sees the next digit (teacher forcing): it
        # fits, and fails the causality gate only.
        "train",
        "property: causal: later decoder inputs leave earlier outputs unchanged",
        "the decoder reads later inputs",
        [
            (
                DECODER,
                "    states = layers.Bidirectional(\n"
                "        layers.GRU(units // 2, return_sequences=True)\n"
                "    )(\n",
            )
        ],
    ),
    (
        # The query from the embedding of the decoder's input: every step that reads a digit
        # attends alike, whichever source token it translates.
        "train",
        "property: the attention's query knows the step (the decoder's state)",
        "cannot know which step it is at",
        [
            (
                "queries = layers.Dense(units, use_bias=False)(states)[:, :, None]",
                "queries = layers.Dense(units, use_bias=False)(\n"
                "        layers.Embedding(vocab_size, units)(decoder_in)\n"
                "    )[:, :, None]",
            )
        ],
    ),
    (
        # A uniform attention: the decoder cannot copy, and in the reference's 3 epochs it does
        # not learn the task (72% held out), so the learned gate is told after the accuracy
        # and names no mistake (GateFailure.needs_learning), as for any model that has not learned.
        "train",
        None,
        "the rewriting is monotone",
        [
            (
                "weights = ops.softmax(scores, axis=-1)",
                "weights = ops.softmax(0.0 * scores, axis=-1)",
            )
        ],
    ),
]

# An encoder–decoder whose answers a student computed rather than trained (issue 45): the date
# rewritten by rule.
RULE = """
def _tokens(inputs):
    source = inputs[:, :7]
    month = source[:, 2] - 10 + 1
    return np.concatenate(
        [source[:, :2], (month // 10)[:, None], (month % 10)[:, None], source[:, 3:]], axis=1
    )


_VOCAB = 23


def _scored(tokens):
    return tokens
"""

# An attention drawn by rule, never learned (the red team's "fake attention"): the monotone
# alignment of dates.
ATTENTION = """
def _attention(inputs):
    alignment = np.array([0, 1, 2, 2, 3, 4, 5, 6])
    return np.broadcast_to(np.eye(7)[alignment], (len(inputs), 8, 7)).copy()
"""

PLANTED = [
    (part, patched_solution(LAB, *patches), mistake, phrase)
    for part, mistake, phrase, patches in PATCHES
]
PLANTED += not_learned_table(patched_solution(LAB), RULE, ATTENTION, "monotone alignment")


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED)


def _case():
    return plain_case(LAB)


def _perfect_answers(case):
    """What a perfect causal translator answers, attending exactly along the alignment."""
    answers = {}
    for name in ("held_out", "later_changed"):
        right = tasks.dates_answers(case.inputs[name])
        answers[name] = np.eye(tasks.DATE_VOCABULARY)[right]
    count = len(case.inputs["held_out"])
    weights = np.eye(tasks.DATE_SOURCE)[tasks.DATE_ALIGNMENT]  # (T, S)
    answers["attention"] = varied(np.broadcast_to(weights, (count, *weights.shape)))
    return answers


def test_the_target_is_the_dates_digits():
    inputs, targets = tasks.dates_data(np.random.default_rng(0), 50)
    day = inputs[:, 0] * 10 + inputs[:, 1]
    month = inputs[:, 2] - tasks.FIRST_MONTH + 1
    assert (targets[:, 2] * 10 + targets[:, 3] == month).all()
    assert (targets[:, 0] * 10 + targets[:, 1] == day).all()
    assert (targets[:, 4:] == inputs[:, 3:7]).all()


def test_a_perfect_translator_passes_every_gate():
    case = _case()
    answers = _perfect_answers(case)
    truth = get_exercise(LAB).part("train").training.answers(case)
    assert accuracy(answers["held_out"], truth) == 1.0
    assert causal(case, answers) is None
    assert monotone_alignment(case, answers) is None
    assert query_knows_the_step(case, answers) is None


def test_outputs_read_from_the_next_decoder_input_fail_causality():
    case = _case()
    answers = _perfect_answers(case)
    for name in ("held_out", "later_changed"):
        following = np.roll(case.inputs[name][:, tasks.DATE_SOURCE :], -1, axis=1) % 10
        answers[name] = np.eye(tasks.DATE_VOCABULARY)[following]
    broken = causal(case, answers)
    assert broken is not None and "the decoder reads later inputs" in broken.message
    assert "run the decoder forward only" in broken.message
    assert not broken.needs_learning
    # The same leak with attention weights normalised over the target steps: that softmax.
    count = len(case.inputs["held_out"])
    scores = np.random.default_rng(0).random((count, tasks.DATE_TARGET, tasks.DATE_SOURCE))
    answers["attention"] = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    broken = causal(case, answers)
    assert "sum to 1 over the target steps, not over the source tokens" in broken.message


def test_attention_on_the_first_source_token_fails_the_alignment():
    case = _case()
    answers = _perfect_answers(case)
    first_token = np.zeros_like(answers["attention"])
    first_token[..., 0] = 1.0
    answers["attention"] = varied(first_token)
    broken = monotone_alignment(case, answers)
    assert broken is not None and "in only 12% of the steps" in broken.message
    assert broken.needs_learning


def test_attention_that_depends_on_the_decoder_input_alone_fails_the_query_gate():
    """A query made from the embedding of the decoder's input: each input token has its own
    attention row, whichever step reads it; the alignment and causality can still hold for
    steps that read different tokens."""
    case = _case()
    answers = _perfect_answers(case)
    rows = np.random.default_rng(0).dirichlet(np.ones(tasks.DATE_SOURCE), tasks.DATE_VOCABULARY)
    answers["attention"] = rows[case.inputs["held_out"][:, tasks.DATE_SOURCE :]]
    broken = query_knows_the_step(case, answers)
    assert broken is not None and not broken.needs_learning
    assert "cannot know which step it is at" in broken.message
    # The same rows from a decoder whose weights training barely moved (3%): it answers as it
    # was drawn, which is no evidence of the query's design; the accuracy's line tells first.
    untrained = {**answers, RUN_MOVED: np.array([0.03])}
    assert query_knows_the_step(case, untrained).needs_learning
    # An untrained decoder's attention, its query from its state: another row at every step.
    count = len(case.inputs["held_out"])
    answers["attention"] = np.random.default_rng(1).dirichlet(
        np.ones(tasks.DATE_SOURCE), (count, tasks.DATE_TARGET)
    )
    assert query_knows_the_step(case, answers) is None
    # Weights the same at every step (uniform) come from no input: the alignment tells them.
    answers["attention"] = np.full_like(answers["attention"], 1 / tasks.DATE_SOURCE)
    assert query_knows_the_step(case, answers) is None


def test_attention_the_same_at_every_step_says_the_score_misses_the_decoder_state():
    """Bahdanau's score without its tanh: vᵀ(W s_t + U h_j) = vᵀ W s_t + vᵀ U h_j, whose first
    term the softmax over j cancels, so every step attends alike; the weights still pick source
    tokens (from vᵀ U h_j). Uniform weights pick none and are the alignment's to tell."""
    case = _case()
    answers = _perfect_answers(case)
    count = len(case.inputs["held_out"])
    per_date = np.random.default_rng(2).dirichlet(np.full(tasks.DATE_SOURCE, 0.3), count)
    answers["attention"] = np.repeat(per_date[:, None], tasks.DATE_TARGET, axis=1)
    broken = query_knows_the_step(case, answers)
    assert broken is not None and not broken.needs_learning
    assert broken.message.startswith("The score misses its tanh, or the decoder's state s_t")
    assert "the same at every target step" in broken.message


def test_a_leak_with_the_source_unread_names_the_encoders_input_and_the_decoders_direction():
    """Outputs read from the next decoder input, and the same answers with the source swapped
    between dates: the digits come from the decoder's later inputs."""
    case = _case()
    answers = _perfect_answers(case)
    for name in ("held_out", "later_changed", SOURCE_SHUFFLED):
        following = np.roll(case.inputs[name][:, tasks.DATE_SOURCE :], -1, axis=1) % 10
        answers[name] = np.eye(tasks.DATE_VOCABULARY)[following]
    broken = causal(case, answers)
    assert broken is not None and not broken.needs_learning
    assert broken.message.startswith("The digits come from the decoder's later inputs")
    assert "inputs[:, :7]" in broken.message and "both directions" in broken.message
    # Where the answers follow the source, the leak alone is told, as before.
    answers[SOURCE_SHUFFLED] = np.eye(tasks.DATE_VOCABULARY)[
        tasks.dates_answers(case.inputs[SOURCE_SHUFFLED])
    ]
    assert "The digits come from" not in causal(case, answers).message


def test_weights_that_sum_to_one_over_the_batch_name_that_axis():
    case = _case()
    answers = _perfect_answers(case)
    count = len(case.inputs["held_out"])
    scores = np.random.default_rng(3).random((count, tasks.DATE_TARGET, tasks.DATE_SOURCE))
    answers["attention"] = np.exp(scores) / np.exp(scores).sum(axis=0, keepdims=True)
    broken = monotone_alignment(case, answers)
    assert broken is not None and not broken.needs_learning
    assert "softmax ran over the examples of the batch (axis 0)" in broken.message
    # Scores, not weights: negative values say so.
    answers["attention"] = scores - 0.5
    assert "before the softmax" in monotone_alignment(case, answers).message
