"""The training labs' answers in a secret code (issue 45): the data a child trains on answers
in a renaming of the answer tokens drawn from the grader's seed, which the child never sees; the
grader reads the model's answers back through it. A model that works the answer out by rule, or
weights made for the task as the docs tell it, answer in the plain tokens and lose."""

import numpy as np
import pytest

from grader.engine.cases import make_cases, save_cases
from grader.engine.results import FAILED
from grader.engine.training import accuracy, plain_view, read_back
from grader.i18n import speaking
from grader.records import get_exercise
from grader.reference import tasks
from grader.vocabulary.bundle import cases_from_bundle, cases_to_bundle, load_bundle
from grader.vocabulary.protocol import CaseOutput
from grader.vocabulary.spec import ALONE, ALONE_ROWS, COUNTERFACTUAL, MOVED, TRAINED
from grader.vocabulary.status import CaseStatus
from tests.support.grading import failures
from tests.support.planting import grade_many, patched_solution
from tests.support.training import NOT_LEARNED, hand_built

# Per lab: the answer tokens the code renames, the plain answers of a case's training data, and
# where the data holds answers (targets, and the teacher-forced inputs' answers so far).
LABS = {
    "train-transformer": np.arange(1, 12),
    "train-memn2n": np.arange(5, 11),
    "train-seq2seq": np.arange(10),
}


def _case(lab, seed=0):
    return make_cases(get_exercise(lab), seed)["train"][0]


def _plain_targets(lab, inputs):
    """The training targets as the task names them, worked out here from the inputs' source."""
    if lab == "train-memn2n":
        return tasks.whereabouts_answers(inputs)[0]
    if lab == "train-seq2seq":
        return tasks.dates_answers(inputs)
    half = inputs.shape[1] // 2
    return inputs[:, :half][:, ::-1]


@pytest.mark.parametrize("lab", LABS)
def test_every_answer_token_is_renamed_and_nothing_else(lab):
    code = _case(lab).answer_code
    answers = LABS[lab]
    assert sorted(code) == list(range(len(code)))  # a permutation
    assert np.all(code[answers] != answers)  # no answer keeps its name
    assert set(code[answers]) == set(answers)  # an answer stays an answer token
    others = np.setdiff1d(np.arange(len(code)), answers)
    assert np.array_equal(code[others], others)


@pytest.mark.parametrize("lab", LABS)
def test_the_training_data_answers_in_the_code_and_the_source_keeps_its_tokens(lab):
    case = _case(lab)
    inputs, targets = case.inputs["inputs"], case.inputs["targets"]
    plain = _plain_targets(lab, plain_view(case).inputs["inputs"])
    scored = targets[:, inputs.shape[1] // 2 :] if lab == "train-transformer" else targets
    assert np.array_equal(scored, case.answer_code[plain])
    assert np.mean(scored != plain) > 0.99  # the plain answers are (nearly) never right
    if lab == "train-transformer":  # the source and the separator as drawn
        half = inputs.shape[1] // 2
        assert np.all(inputs[:, :half] > 0) and np.all(inputs[:, half] == 0)
        # the inputs' answers so far are the targets' (teacher forcing), in the code too
        assert np.array_equal(inputs[:, half + 1 :], targets[:, half:-1])


def test_public_and_hidden_cases_have_codes_of_their_own():
    for lab in LABS:
        record = get_exercise(lab)
        (public,) = make_cases(record, 0)["train"]
        (hidden,) = make_cases(record, 0, hidden_seed=12345)["train"]
        assert not np.array_equal(public.answer_code, hidden.answer_code), lab
        assert np.array_equal(_case(lab).answer_code, public.answer_code)  # same seed, same code


def test_a_class_trains_each_model_once_on_its_hidden_case_and_keeps_every_other_case():
    """With a hidden seed (a batch, Gradescope) a part that trains is graded on its hidden case
    alone (the public one is what `grader check` trains on the student's machine); a part that
    trains nothing keeps its public cases and adds hidden ones."""
    for lab in LABS:
        (hidden,) = make_cases(get_exercise(lab), 0, hidden_seed=12345)["train"]
        assert hidden.hidden and hidden.label.startswith("hidden")
    record = get_exercise("8-2")
    for name, cases in make_cases(record, 0, hidden_seed=12345).items():
        public = make_cases(record, 0)[name]
        assert 0 < len(public) < len(cases)
        assert sum(case.hidden for case in cases) == len(cases) - len(public)


@pytest.mark.parametrize("code", ["answer_code", "position_code"])
def test_the_child_never_reads_the_codes_and_the_graders_own_files_keep_them(code, tmp_path):
    case = _case("train-memn2n")
    save_cases(tmp_path / "cases.npz", [case])  # what the child reads
    meta, arrays = load_bundle(tmp_path / "cases.npz")
    assert not any(code in name for name in arrays)
    assert code not in repr(meta)
    assert getattr(cases_from_bundle(meta["cases"], arrays)[0], code) is None
    described, arrays = cases_to_bundle([case], answer_codes=True)  # a fixture, a batch's hash
    kept = getattr(cases_from_bundle(described, arrays)[0], code)
    assert np.array_equal(kept, getattr(case, code))


def test_answers_are_read_back_into_the_tasks_tokens():
    case = _case("train-transformer")
    code, held_out = case.answer_code, case.inputs["held_out"]
    truth = tasks.reversal_answers(plain_view(case).inputs["held_out"])
    right = np.where(truth < 0, 0, truth)
    in_code = np.eye(12)[code[right]]  # a model that learned: one-hot scores in the code
    attention = np.full((len(held_out), 12, 12), 1 / 12)
    weights = np.arange(12.0)
    got = CaseOutput(
        CaseStatus.OK,
        output=in_code,
        grads={
            "held_out": in_code,
            f"{COUNTERFACTUAL}/held_out": in_code,
            COUNTERFACTUAL: in_code,
            MOVED: code[right],  # tokens, not scores
            ALONE: in_code[:ALONE_ROWS],
            "attention": attention,
            f"{TRAINED}/0000": weights,
        },
    )
    back = read_back(case, got)
    for answer in (back.output, back.grads["held_out"], back.grads[COUNTERFACTUAL]):
        assert accuracy(answer, truth) == 1.0
    assert accuracy(back.grads[f"{COUNTERFACTUAL}/held_out"], truth) == 1.0
    assert np.array_equal(back.grads[MOVED], right)
    assert accuracy(back.grads[ALONE], truth[:ALONE_ROWS]) == 1.0
    # the weights as they came; the attention, uniform, the same in any order of its keys
    assert back.grads[f"{TRAINED}/0000"] is weights
    assert np.array_equal(back.grads["attention"], attention)
    # unread, the same answers are wrong nearly everywhere
    assert accuracy(in_code, truth) < 0.1


@pytest.mark.slow
def test_rules_for_the_task_as_documented_lose_the_part(tmp_path):
    """The red teams' hand-built models of the where-is stories, graded for real: a weightless
    layer that answers by rule, never trained, answers in the task's tokens, wrong in the data's
    code; the same rule switched on once the answer code it counts in the data is clean reads
    the facts where the task puts them, so in the data's rotation (test_position_code.py) the
    counts are never clean and the rule stays off. Neither trained anything."""
    from tests.grader.test_lab_train_memn2n import RULE

    ways = ("always", "rule found in the data")
    sources = {
        when: (hand_built(patched_solution("train-memn2n"), RULE, when), ["train"]) for when in ways
    }
    with speaking("en"):
        results = grade_many("train-memn2n", sources, tmp_path)
    for when in ways:
        part = results[when].part("train")
        messages = [check.message for check in failures(part)]
        assert part.status == FAILED and part.score == 0.0, (when, messages)
        assert any(NOT_LEARNED in message for message in messages), (when, messages)
