"""Lab train-memn2n: its gates on answers made here (no training), and the planted table of
models that break a gate, each of which must lose the part with the gate's explanation. Full
marks, the stub and the planted table are graded by tests/grader/test_records.py (marked slow
there: each graded submission trains a model in the sandbox, about 11 s of one CPU core)."""

import numpy as np
import pytest

from grader.engine.cases import make_cases
from grader.engine.training import accuracy
from grader.records import get_exercise
from grader.records.lab_train_memn2n import VOCAB_SIZE, follows_the_fact, on_the_supporting_fact
from grader.reference import tasks
from tests.support.planting import from_table, patched_solution

pytestmark = pytest.mark.labs

LAB = "train-memn2n"
TEMPORAL = "    memories = memories + layers.Embedding(facts, model_dim)(order)[None]\n"

# (part, mistake, the phrases of the feedback, (old, new) patches of the solution)
PATCHES = [
    (
        # Without the temporal encoding the memories of two facts about one person differ only
        # by their places: the network cannot tell the latest one.
        "train",
        "property: attention on the supporting fact",
        "add a temporal encoding",
        [(TEMPORAL, "")],
    ),
    (
        "train",
        "property: attention on the supporting fact",
        "a memory network answers by reading that fact",
        [
            (
                "return model.predict(inputs, batch_size=256, verbose=0)[1]",
                "return model.predict(inputs, batch_size=256, verbose=0)[1][:, ::-1]",
            )
        ],
    ),
]

PLANTED = [
    (part, patched_solution(LAB, *patches), mistake, phrase)
    for part, mistake, phrase, patches in PATCHES
]


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED)


def _case():
    return make_cases(get_exercise(LAB), 0)["train"][0]


def _perfect_answers(case):
    """What a perfect memory network answers, all its attention on the supporting fact."""
    answers = {}
    for name in ("held_out", "moved"):
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


def test_attention_on_an_older_fact_about_the_person_fails_with_the_temporal_hint():
    """Attention on the first fact about the person asked: the supporting fact only where the
    person is named once."""
    case = _case()
    answers = _perfect_answers(case)
    stories = case.inputs["held_out"]
    about = stories[:, :-1, 0] == stories[:, -1:, 0]
    answers["attention"] = np.eye(stories.shape[1] - 1)[about.argmax(axis=1)]
    broken = on_the_supporting_fact(case, answers)
    assert broken is not None and "add a temporal encoding" in broken


def test_an_answer_that_ignores_the_story_fails_the_follow_gate():
    case = _case()
    answers = _perfect_answers(case)
    answers["moved"] = answers["held_out"]
    broken = follows_the_fact(case, answers)
    assert broken is not None and "not from the story it reads" in broken
