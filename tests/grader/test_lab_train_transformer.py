"""Lab train-transformer: its gates on answers made here (no training), and the planted table
of models that fit their data but break a gate, each of which must lose the part with the
gate's explanation. Full marks, the stub and the planted table are graded by
tests/grader/test_records.py (marked slow there: each graded submission trains a model in the
sandbox, about 8 s of one CPU core)."""

import numpy as np
import pytest

from grader.engine.feedback import problems
from grader.engine.judging import judge_case
from grader.engine.results import FAILED, PartResult
from grader.engine.training import accuracy, expected_output
from grader.records import get_exercise
from grader.records.lab_train_transformer import anti_diagonal, causal, uses_positions
from grader.reference import tasks
from grader.vocabulary.protocol import CaseOutput
from grader.vocabulary.spec import RUN_LOSS
from grader.vocabulary.status import CaseStatus
from tests.support.planting import from_table, patched_solution
from tests.support.training import not_learned_table, plain_case, untrained_evidence, varied

pytestmark = pytest.mark.labs

LAB = "train-transformer"

# (part, mistake, the phrases of the feedback, an (old, new) patch of the solution)
PATCHES = [
    (
        # Without the mask the model reads the next token, which teacher forcing puts in its
        # input: it fits (accuracy near 100%) and fails only the causality gate.
        "train",
        "property: causal: later tokens leave earlier outputs unchanged",
        "the model looks at later tokens",
        ("use_causal_mask=True", "use_causal_mask=False"),
    ),
    (
        "train",
        "property: uses positions: the answer follows the source's order",
        "the model does not see order",
        (
            "hidden = layers.Embedding(vocab_size, model_dim)(tokens) + places[None]",
            "hidden = layers.Embedding(vocab_size, model_dim)(tokens)",
        ),
    ),
    (
        "train",
        "property: attention on the anti-diagonal",
        "those are scores, taken before the softmax",
        (  # the model's own attention output (the grader reads it, not the stub's)
            "return keras.Model(tokens, [probabilities, weights])",
            "return keras.Model(tokens, [probabilities, ops.log(weights + 1e-9)])",
        ),
    ),
]

# A model whose answers a student computed rather than trained (issue 45): the reversal by rule.
RULE = """
_VOCAB = 12


def _tokens(inputs):
    n = inputs.shape[1] // 2
    return np.concatenate([inputs[:, :n], inputs[:, :n][:, ::-1]], axis=1)


def _scored(tokens):
    return tokens[:, tokens.shape[1] // 2 :]
"""

# An attention drawn by rule, never learned (the red team's "fake attention"): the anti-diagonal.
ATTENTION = """
def _attention(inputs):
    count, length = inputs.shape
    rows = np.arange(length)
    keys = np.where(rows >= length // 2, length - 1 - rows, rows)
    return np.broadcast_to(np.eye(length)[keys], (count, length, length)).copy()
"""

PLANTED = [
    (part, patched_solution(LAB, patch), mistake, phrase)
    for part, mistake, phrase, patch in PATCHES
]
PLANTED += not_learned_table(
    patched_solution(LAB), RULE, ATTENTION, "attention on the anti-diagonal"
)


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED)


# The gates on answers made here, without training: each fails on the model it is about.


def _case():
    return plain_case(LAB)


def _one_hot(tokens, vocab_size=12):
    return np.eye(vocab_size)[tokens]


def _perfect_answers(case):
    """What a perfect causal reverser answers, attention exactly on the anti-diagonal."""
    answers = {}
    for name in ("held_out", "later_changed", "reordered"):
        inputs = case.inputs[name]
        truth = tasks.reversal_answers(inputs)
        answers[name] = _one_hot(np.where(truth < 0, 0, truth))
    count, length = case.inputs["held_out"].shape
    weights = np.zeros((count, 1, length, length))
    for p in range(length):
        weights[:, 0, p, length - 1 - p if p >= length // 2 else p] = 1.0
    answers["attention"] = varied(weights)
    return answers


def test_a_perfect_reverser_passes_every_gate_and_scores_full_accuracy():
    case = _case()
    answers = _perfect_answers(case)
    truth = get_exercise(LAB).part("train").training.answers(case)
    assert accuracy(answers["held_out"], truth) == 1.0
    assert [gate(case, answers) for gate in (causal, uses_positions, anti_diagonal)] == [None] * 3


def test_a_model_that_reads_the_next_input_fails_causality_only():
    """Answers computed from the input one position ahead: right on the held-out inputs (with
    teacher forcing the next token is there), and changed by a change after them."""
    case = _case()
    answers = _perfect_answers(case)
    for name in ("held_out", "later_changed"):
        inputs = case.inputs[name]
        answers[name] = _one_hot(np.concatenate([inputs[:, 1:], inputs[:, -1:]], axis=1))
    broken = causal(case, answers)
    assert broken is not None and "looks at later tokens" in broken.message
    assert not broken.needs_learning


def test_a_model_blind_to_order_fails_the_position_gate():
    """First answers that ignore the reordering (the same as for the original source)."""
    case = _case()
    answers = _perfect_answers(case)
    answers["reordered"] = answers["held_out"].copy()
    broken = uses_positions(case, answers)
    assert broken is not None and "does not see order" in broken.message
    assert not broken.needs_learning
    # The same first answer for every sequence, as from a model that collapsed in training: it
    # does not read its input at all, which is no evidence about positions.
    for name in ("held_out", "reordered"):
        answers[name] = np.broadcast_to(answers["held_out"][:1], answers["held_out"].shape)
    broken = uses_positions(case, answers)
    assert broken is not None and broken.needs_learning


def test_order_blindness_with_an_attention_still_uniform_names_no_missing_positions():
    """An untrained model with positions whose attention weighs every token alike sums the
    source as a set: its first answer ignores the order too, which is no evidence that the
    positions are missing (too little training gives it)."""
    case = _case()
    answers = _perfect_answers(case)
    answers["reordered"] = answers["held_out"].copy()
    count, length = case.inputs["held_out"].shape
    causal = np.tril(np.ones((length, length)))
    answers["attention"] = np.broadcast_to(
        causal / causal.sum(-1, keepdims=True), (count, 1, length, length)
    )
    broken = uses_positions(case, answers)
    assert broken is not None and broken.needs_learning
    assert "does not see order" not in broken.message
    # Once the training moved the loss, the same blindness is evidence of missing positions.
    answers[RUN_LOSS] = np.array([2.4, 1.6, 1.5])
    broken = uses_positions(case, answers)
    assert broken is not None and "does not see order" in broken.message


def test_attention_on_the_diagonal_fails_the_attention_gate():
    case = _case()
    answers = _perfect_answers(case)
    count, length = case.inputs["held_out"].shape
    answers["attention"] = varied(np.broadcast_to(np.eye(length), (count, 1, length, length)))
    broken = anti_diagonal(case, answers)
    # Of the source keys, a row on the diagonal weighs all alike: its largest is key 0, the
    # mirrored one for the last row only.
    assert broken is not None and "the mirrored one (key 2n − 1 − p) in only 17%" in broken.message
    assert broken.needs_learning


def _first_problem(case, answers):
    """The check a student reads first when the part is graded on these answers."""
    part = get_exercise(LAB).part("train")
    answers = {**untrained_evidence(answers["held_out"], answers), **answers}
    got = CaseOutput(CaseStatus.OK, output=answers["held_out"], grads=answers)
    checks = judge_case(part, case, expected_output(part, case), got)
    return problems(PartResult("train", 10, FAILED, checks))[0], checks


def _two_back(inputs):
    """A causal model that has not learned to reverse (as one trained on targets shifted twice):
    at each position, the token two back."""
    return _one_hot(np.concatenate([inputs[:, :2], inputs[:, :-2]], axis=1))


def test_a_model_that_has_not_learned_is_told_the_accuracy_first():
    """The answers are not the reversal, and with the source reordered the first answer changes
    but is not the new last source token (a learned behaviour). The accuracy line, which sends
    the student to the training, comes first; the gates that describe a trained model still
    fail, but name no mistake."""
    case = _case()
    answers = _perfect_answers(case)
    for name in ("held_out", "later_changed", "reordered"):
        answers[name] = _two_back(case.inputs[name])
    count, length = case.inputs["held_out"].shape
    answers["attention"] = varied(np.full((count, length, length), 1.0 / length))
    first, checks = _first_problem(case, answers)
    assert first.name.startswith("build_model: accuracy on held-out inputs")
    failed = {
        check.name.removeprefix("build_model: ").split(",")[0]: check
        for check in checks
        if not check.passed
    }
    position = failed["uses positions: the answer follows the source's order"]
    assert "does not find the token by its position" in position.message
    assert position.mistake is None and failed["attention on the anti-diagonal"].mistake is None


def test_a_structural_failure_is_told_before_the_accuracy():
    """Blind to order (the reordered answers exactly the same) and not reversing: the position
    gate's structural line comes first, named."""
    case = _case()
    answers = _perfect_answers(case)
    for name in ("held_out", "later_changed"):
        answers[name] = _two_back(case.inputs[name])
    answers["reordered"] = answers["held_out"].copy()
    first, _checks = _first_problem(case, answers)
    assert "does not see order" in first.message
    assert first.mistake == "property: uses positions: the answer follows the source's order"


def test_with_the_accuracy_reached_a_learned_gate_names_its_mistake():
    case = _case()
    answers = _perfect_answers(case)
    count, length = case.inputs["held_out"].shape
    answers["attention"] = varied(np.broadcast_to(np.eye(length), (count, 1, length, length)))
    first, _checks = _first_problem(case, answers)
    assert first.mistake == "property: attention on the anti-diagonal"


def _leaking(case, weights):
    answers = _perfect_answers(case)
    for name in ("held_out", "later_changed"):
        inputs = case.inputs[name]
        answers[name] = _one_hot(np.concatenate([inputs[:, 1:], inputs[:, -1:]], axis=1))
    answers["attention"] = weights
    return causal(case, answers).message


@pytest.mark.parametrize(
    ("kind", "phrase"),
    [
        ("uniform", "mask the attention causally"),
        ("over queries", "sum to 1 over the queries (each column)"),
        ("after softmax", "the mask was applied after the softmax"),
        ("causal", "something else mixes the positions"),
    ],
)
def test_a_leak_is_told_with_what_the_attention_weights_show(kind, phrase):
    """No mask (weight on later keys), a softmax over the queries, a mask multiplied after the
    softmax, and causal weights with the leak elsewhere (a LayerNormalization over positions)."""
    case = _case()
    count, length = case.inputs["held_out"].shape
    ones = np.ones((length, length))
    lower = np.tril(ones)
    weights = {
        "uniform": ones / length,
        "over queries": np.triu(ones) / np.triu(ones).sum(0, keepdims=True),
        "after softmax": lower / length,
        "causal": lower / lower.sum(-1, keepdims=True),
    }[kind]
    said = _leaking(case, np.broadcast_to(weights, (count, 1, length, length)))
    assert "looks at later tokens" in said and phrase in said, said
