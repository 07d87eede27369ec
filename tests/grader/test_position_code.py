"""The training labs' source in a secret rotation (issue 45): every array a child reads holds
the source positions (the transformer's source tokens, the memory network's facts, the date's
seven tokens) turned round by a number of places drawn from the grader's seed, none keeping its
place; the grader reads the attention's source keys back into the task's order and judges in
that order.
An attention built by hand for the task's own positions looks at the wrong tokens."""

import numpy as np
import pytest

from grader.engine.cases import make_cases
from grader.engine.training import plain_view, read_back
from grader.records import get_exercise
from grader.reference import tasks
from grader.vocabulary.protocol import CaseOutput
from grader.vocabulary.spec import UNTRAINED
from grader.vocabulary.status import CaseStatus
from tests.support.training import plain_positions, varied

pytestmark = pytest.mark.labs

# Per lab: how many source positions the order moves, and the gate that reads the attention.
LABS = {
    "train-transformer": (6, "attention on the anti-diagonal"),
    "train-memn2n": (6, "attention on the supporting fact"),
    "train-seq2seq": (7, "monotone alignment"),
}


def _case(lab, seed=0):
    return make_cases(get_exercise(lab), seed)["train"][0]


def _in_task_order(lab, seed=0):
    with plain_positions():
        return _case(lab, seed)


@pytest.mark.parametrize("lab", LABS)
def test_every_source_position_moves_and_nothing_else_does(lab):
    case, plain = _case(lab), _in_task_order(lab)
    order = case.position_code
    count = LABS[lab][0]
    assert sorted(order) == list(range(count)) and np.all(order != np.arange(count))
    assert np.all(np.diff(order) % count == 1)  # a rotation: neighbours stay neighbours
    for name, array in case.inputs.items():
        task = plain.inputs[name]
        if name == "targets":
            continue
        assert np.array_equal(array[:, :count], task[:, order]), name
        assert np.array_equal(array[:, count:], task[:, count:]), name
    targets, task_targets = case.inputs["targets"], plain.inputs["targets"]
    if lab == "train-transformer":
        # the answers as the task has them; before the separator, the data's next source token
        assert np.array_equal(targets[:, count - 1 :], task_targets[:, count - 1 :])
        assert np.array_equal(targets[:, : count - 1], case.inputs["inputs"][:, 1:count])
    else:
        assert np.array_equal(targets, task_targets)


@pytest.mark.parametrize("lab", LABS)
def test_the_right_answers_are_the_tasks_and_the_plain_view_gives_the_task_back(lab):
    case, plain = _case(lab), _in_task_order(lab)
    view = plain_view(case)
    for name in case.inputs:
        if name != "targets":
            assert np.array_equal(view.inputs[name], plain.inputs[name]), name
    part = get_exercise(lab).part("train")
    assert np.array_equal(part.training.answers(view), part.training.answers(plain))


def test_public_and_hidden_cases_have_orders_of_their_own():
    differ = 0
    for lab in LABS:
        (public,) = make_cases(get_exercise(lab), 0)["train"]
        (hidden,) = make_cases(get_exercise(lab), 0, hidden_seed=12345)["train"]
        differ += not np.array_equal(public.position_code, hidden.position_code)
        assert np.array_equal(_case(lab).position_code, public.position_code)  # same seed
    assert differ >= 2  # 6 or 7 positions: two orders may meet by chance, not three


def _looking_right(lab, case) -> np.ndarray:
    """Attention weights, in the data's order, all on the source token the task reads: one-hot
    on the key where the data put the task's right source position."""
    where = np.argsort(case.position_code)  # data position of each task position
    view = plain_view(case)
    held_out = case.inputs["held_out"]
    if lab == "train-transformer":
        length = held_out.shape[1]
        half = length // 2
        weights = np.zeros((len(held_out), 1, length, length))
        for query in range(length):
            key = where[length - 1 - query] if query >= half else query
            weights[:, 0, query, key] = 1.0
        return varied(weights)
    if lab == "train-memn2n":
        support = tasks.whereabouts_answers(view.inputs["held_out"])[1]
        weights = np.zeros((len(held_out), 1, LABS[lab][0]))
        weights[np.arange(len(held_out)), 0, where[support]] = 1.0
        return weights
    weights = np.zeros((len(held_out), tasks.DATE_TARGET, tasks.DATE_SOURCE))
    weights[:, np.arange(tasks.DATE_TARGET), where[tasks.DATE_ALIGNMENT]] = 1.0
    return varied(weights)


@pytest.mark.parametrize("lab", LABS)
def test_attention_on_the_datas_right_token_is_read_back_and_passes_its_gate(lab):
    case = _case(lab)
    part = get_exercise(lab).part("train")
    gate = next(g for g in part.training.gates if g.name == LABS[lab][1])
    weights = _looking_right(lab, case)
    got = CaseOutput(
        CaseStatus.OK, output=None, grads={"attention": weights, f"{UNTRAINED}/attention": weights}
    )
    back = read_back(case, got)
    assert gate.check(plain_view(case), {"attention": back.grads["attention"]}) is None
    assert np.array_equal(back.grads[f"{UNTRAINED}/attention"], back.grads["attention"])
    # Not read back, the same weights look at the wrong tokens: the order is what they follow.
    assert gate.check(plain_view(case), {"attention": weights}) is not None


def test_a_causal_attention_in_the_datas_order_shows_no_leak_once_read_back():
    case = _case("train-transformer")
    length = case.inputs["held_out"].shape[1]
    causal = np.tril(np.ones((length, length)))
    weights = np.broadcast_to(causal / causal.sum(axis=1, keepdims=True), (4, 1, length, length))
    got = CaseOutput(CaseStatus.OK, output=None, grads={"attention": np.array(weights)})
    back = read_back(case, got).grads["attention"]
    # Its source keys moved, the answer rows' later keys did not: rows still sum to 1, and no
    # weight sits on a later key of an answer row.
    assert not np.array_equal(back, weights)
    assert tasks.self_attention_leak(back) == "elsewhere"
    unmasked = np.full((4, 1, length, length), 1 / length)
    assert tasks.self_attention_leak(unmasked) == "later keys"
