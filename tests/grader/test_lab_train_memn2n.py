"""Lab train-memn2n: its gates on answers made here (no training), and the planted table of
models that break a gate, each of which must lose the part with the gate's explanation. Full
marks, the stub and the planted table are graded by tests/grader/test_records.py (marked slow
there: each graded submission trains a model in the sandbox, about 6 s of one CPU core)."""

import numpy as np
import pytest

from grader.engine.feedback import problems
from grader.engine.judging import judge_case
from grader.engine.results import FAILED, PartResult
from grader.engine.training import accuracy, expected_output
from grader.records import get_exercise
from grader.records.lab_train_memn2n import (
    VOCAB_SIZE,
    follows_the_fact,
    on_the_supporting_fact,
    sees_the_order,
)
from grader.reference import tasks
from grader.vocabulary.protocol import CaseOutput
from grader.vocabulary.status import CaseStatus
from tests.support.planting import from_table, patched_solution
from tests.support.training import not_learned_table, plain_case, untrained_evidence, varied

pytestmark = pytest.mark.labs

LAB = "train-memn2n"
TEMPORAL = "    memories = memories + layers.Embedding(facts, model_dim)(order)[None]\n"

# (part, mistake, the phrases of the feedback, (old, new) patches of the solution)
PATCHES = [
    (
        # Without the temporal encoding the network is a function of the set of facts: it
        # cannot tell the latest fact about a person, and reordering the facts changes nothing.
        "train",
        "property: temporal encoding: the answer changes with the order of the facts",
        "Add a temporal encoding to the memories",
        [(TEMPORAL, ""), (TEMPORAL.replace("memories", "outputs"), "")],
    ),
    (
        "train",
        "property: attention on the supporting fact",
        "a memory network answers by reading that fact",
        [
            (  # the model's own attention output (the grader reads it, not the stub's)
                "return keras.Model(inputs, [probabilities, weights])",
                "return keras.Model(inputs, [probabilities, ops.flip(weights, axis=-1)])",
            )
        ],
    ),
]

# A network whose answers a student computed rather than trained (issue 45): the place of the
# latest fact about the person asked, by rule.
RULE = """
def _tokens(inputs):
    facts = inputs.shape[1] - 1
    about = inputs[:, :facts, 0] == inputs[:, facts:, 0]
    latest = facts - 1 - np.argmax(about[:, ::-1], axis=1)
    return inputs[np.arange(len(inputs)), latest, 1]


_VOCAB = 11


def _scored(tokens):
    return tokens
"""

# An attention drawn by rule, never learned (the red team's "fake attention"): on the latest
# fact about the person asked.
ATTENTION = """
def _attention(inputs):
    facts = inputs.shape[1] - 1
    about = inputs[:, :facts, 0] == inputs[:, facts:, 0]
    latest = facts - 1 - np.argmax(about[:, ::-1], axis=1)
    return np.eye(facts)[latest]
"""

PLANTED = [
    (part, patched_solution(LAB, *patches), mistake, phrase)
    for part, mistake, phrase, patches in PATCHES
]
PLANTED += not_learned_table(patched_solution(LAB), RULE, ATTENTION)


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED)


def _case():
    return plain_case(LAB)


def _perfect_answers(case):
    """What a perfect memory network answers, all its attention on the supporting fact."""
    answers = {}
    for name in ("held_out", "moved", "reordered"):
        right = tasks.whereabouts_answers(case.inputs[name])[0]
        answers[name] = np.eye(VOCAB_SIZE)[right]
    support = tasks.whereabouts_answers(case.inputs["held_out"])[1]
    answers["attention"] = np.eye(case.inputs["held_out"].shape[1] - 1)[support]
    return answers


def test_the_supporting_fact_is_the_latest_about_the_person_asked():
    stories = np.array([[[1, 5], [2, 6], [1, 7], [3, 8], [2, 9], [4, 5], [1, 0]]])
    answers, support = tasks.whereabouts_answers(stories)
    assert support.tolist() == [2] and answers.tolist() == [7]


def test_a_perfect_memory_network_passes_every_gate():
    case = _case()
    answers = _perfect_answers(case)
    truth = get_exercise(LAB).part("train").training.answers(case)
    assert accuracy(answers["held_out"], truth) == 1.0
    assert on_the_supporting_fact(case, answers) is None
    assert follows_the_fact(case, answers) is None
    assert sees_the_order(case, answers) is None


def test_attention_on_an_older_fact_about_the_person_fails_with_the_temporal_hint():
    """Attention on the first fact about the person asked: the supporting fact only where the
    person is named once."""
    case = _case()
    answers = _perfect_answers(case)
    stories = case.inputs["held_out"]
    about = stories[:, :-1, 0] == stories[:, -1:, 0]
    answers["attention"] = np.eye(stories.shape[1] - 1)[about.argmax(axis=1)]
    broken = on_the_supporting_fact(case, answers)
    assert broken is not None and "add a temporal encoding" in broken.message
    assert broken.needs_learning


def test_an_answer_that_ignores_the_story_fails_the_follow_gate():
    case = _case()
    answers = _perfect_answers(case)
    answers["moved"] = answers["held_out"]
    broken = follows_the_fact(case, answers)
    assert broken is not None and "not from the story it reads" in broken.message
    assert broken.needs_learning


def test_reordering_the_facts_changes_the_right_answer_and_keeps_the_facts():
    case = _case()
    held_out, reordered = case.inputs["held_out"], case.inputs["reordered"]
    changed = tasks.whereabouts_answers(held_out)[0] != tasks.whereabouts_answers(reordered)[0]
    assert changed.mean() > 0.5
    assert (reordered[:, -1] == held_out[:, -1]).all()
    assert (reordered[~changed] == held_out[~changed]).all()
    for before, after in zip(held_out[changed], reordered[changed], strict=True):
        assert sorted(map(tuple, before[:-1])) == sorted(map(tuple, after[:-1]))


def _first_problem(case, answers):
    """The check a student reads first when the part is graded on these answers."""
    part = get_exercise(LAB).part("train")
    answers = {**untrained_evidence(answers["held_out"], answers), **answers}
    got = CaseOutput(CaseStatus.OK, output=answers["held_out"], grads=answers)
    checks = judge_case(part, case, expected_output(part, case), got)
    return problems(PartResult("train", 10, FAILED, checks))[0], checks


def _set_function_answers(case):
    """A network that reads the facts as a set: it answers the largest place token among the
    facts about the person asked and spreads its attention evenly over them."""
    answers = {}
    for name in ("held_out", "moved", "reordered"):
        stories = case.inputs[name]
        about = stories[:, :-1, 0] == stories[:, -1:, 0]
        answers[name] = np.eye(VOCAB_SIZE)[np.where(about, stories[:, :-1, 1], 0).max(axis=1)]
    about = case.inputs["held_out"][:, :-1, 0] == case.inputs["held_out"][:, -1:, 0]
    answers["attention"] = about / about.sum(axis=1, keepdims=True)
    return answers


def test_a_network_blind_to_the_order_of_the_facts_is_told_the_temporal_encoding_first():
    case = _case()
    first, _checks = _first_problem(case, _set_function_answers(case))
    assert first.mistake == (
        "property: temporal encoding: the answer changes with the order of the facts"
    )
    assert "Add a temporal encoding to the memories" in first.message


def test_answers_that_ignore_the_story_are_not_told_the_temporal_encoding():
    """Answers from the question alone are the same under any reordering, but also when the
    supporting fact's place changes: the network does not read the story, which the gate on
    following the fact says."""
    case = _case()
    answers = _set_function_answers(case)
    for name in ("held_out", "moved", "reordered"):
        answers[name] = np.eye(VOCAB_SIZE)[case.inputs[name][:, -1, 0]]
    assert sees_the_order(case, answers) is None
    assert follows_the_fact(case, answers) is not None


def test_a_network_that_has_not_learned_is_told_the_accuracy_first():
    """Answers at random (they change with the order of the facts, as an untrained network's
    with a temporal encoding do) and attention spread evenly: the accuracy comes first, the
    attention gate still fails but names no mistake."""
    case = _case()
    rng = np.random.default_rng(0)
    answers = {
        name: rng.dirichlet(np.ones(VOCAB_SIZE), len(case.inputs[name]))
        for name in ("held_out", "moved", "reordered")
    }
    facts = case.inputs["held_out"].shape[1] - 1
    answers["attention"] = varied(np.full((len(case.inputs["held_out"]), facts), 1.0 / facts))
    first, checks = _first_problem(case, answers)
    assert first.name.startswith("build_model: accuracy on held-out inputs")
    attention = [check for check in checks if "attention on the supporting fact" in check.name]
    assert not attention[0].passed and attention[0].mistake is None
    assert all(check.passed for check in checks if "temporal encoding" in check.name)


def test_weights_that_sum_to_one_over_the_batch_name_that_axis():
    """A softmax over the stories of the batch (axis 0), not over the facts: the rows over the
    facts are not distributions, and the axis the weights do sum over is named."""
    case = _case()
    answers = _perfect_answers(case)
    count, facts = len(case.inputs["held_out"]), case.inputs["held_out"].shape[1] - 1
    scores = np.random.default_rng(0).random((count, facts))
    answers["attention"] = np.exp(scores) / np.exp(scores).sum(axis=0, keepdims=True)
    broken = on_the_supporting_fact(case, answers)
    assert broken is not None and not broken.needs_learning
    assert "softmax ran over the examples of the batch (axis 0)" in broken.message
    assert "return the weights after the softmax" not in broken.message
