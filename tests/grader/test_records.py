"""What every record must do, tested once over all of them: the reference solution scores full
marks on its public and hidden checks (graded in the sandbox, where it is whole, and refused no
system call: tests/support/grading.py), the generated stub reports "not implemented yet" on every
part, every hidden check is a check the student never saw, and every mistake a record names has
a planted submission that, graded, fails the right part with that mistake named.

Each record's own file (`test_ex8_*.py`, `test_lab_*.py`) keeps only what is its own: its table of
planted mistakes (`planted()`), correct alternatives written another way, properties.
"""

import contextlib
import importlib

import pytest

from grader.engine.cases import make_cases
from grader.engine.results import ERROR, FAILED
from grader.i18n import speaking
from grader.records import EXERCISES
from tests.support.advice import callers, conflicting_advice
from tests.support.grading import (
    assert_reference_scores_full_marks,
    assert_stub_reports_not_implemented,
    failures,
)
from tests.support.jargon import shown_jargon
from tests.support.planting import grade_many
from tests.support.training import plain_positions

# The hidden seed each record's reference is graded with (each record's file asserts more on the
# same graded result, reference_result(id, seed), which is graded once per run).
HIDDEN_SEEDS = {
    "8-1": 5,
    "8-2": None,
    "8-3": 3,
    "8-4": 4,
    "8-5": 11,
    "8-6": 11,
    "additive": 3,
    "bahdanau": 7,
    "hard": 4,
    "luong": 3,
    "masked-softmax": 5,
    "mha": 2,
    "modern-hopfield": 9,
    "nw": 11,
    "pointer": 5,
    "positions": 6,
    "kv-cache": 4,
    "transformer-block": 5,
    "flash": 5,
    # A lab that trains a model: the reference trains once (public seed); hidden checks would
    # train it again (benchmarks/train_labs_bench.py runs it over many seeds).
    "train-transformer": None,
    "train-memn2n": None,
    "train-seq2seq": None,
}

TRAINED_IN_CI = "train-memn2n"


def _marked(exercise_id, grading=None):
    """The exercise's marker; with `grading` ("reference" or "planted"), for a test that grades
    the reference or the table of planted submissions, where a lab that trains a model trains it
    (5-14 s of one core a submission). CI trains one reference end to end, the cheapest lab's;
    the other labs' references and every planted table (one training each) run with -m long,
    and many seeds of each in benchmarks/train_labs_bench.py. Each lab's gates are tested in CI
    without training, on answers made in its own file (test_lab_train_*.py)."""
    mark = (
        pytest.mark.labs
        if not exercise_id[0].isdigit()
        else getattr(pytest.mark, "ex" + exercise_id.replace("-", "_"))
    )
    marks = [mark]
    if grading and EXERCISES[exercise_id].trains:
        trained_in_ci = grading == "reference" and exercise_id == TRAINED_IN_CI
        marks.append(pytest.mark.slow if trained_in_ci else pytest.mark.long)
    return pytest.param(exercise_id, marks=marks, id=exercise_id)


EVERY_RECORD = [_marked(exercise_id) for exercise_id in EXERCISES]
EVERY_REFERENCE = [_marked(exercise_id, "reference") for exercise_id in EXERCISES]
EVERY_PLANTED_TABLE = [_marked(exercise_id, "planted") for exercise_id in EXERCISES]


def test_every_record_has_a_hidden_seed():
    assert set(HIDDEN_SEEDS) == set(EXERCISES)


@pytest.mark.parametrize("exercise_id", EVERY_REFERENCE)
def test_reference_scores_full_marks_and_is_refused_no_call(exercise_id):
    assert_reference_scores_full_marks(exercise_id, hidden_seed=HIDDEN_SEEDS[exercise_id])


@pytest.mark.parametrize("exercise_id", EVERY_RECORD)
def test_stub_reports_not_implemented_for_every_part(exercise_id):
    assert_stub_reports_not_implemented(exercise_id)


@pytest.mark.parametrize("exercise_id", EVERY_RECORD)
def test_hidden_cases_are_new_and_reproducible(exercise_id):
    """Hidden cases are labelled hidden, differ from the public ones, and one seed always gives
    the same ones (a rerun grades what the first run graded); a part that trains a model keeps
    only its hidden case."""
    record = EXERCISES[exercise_id]
    public = make_cases(record, 0)
    first, again = make_cases(record, 0, 7), make_cases(record, 0, 7)
    other = make_cases(record, 0, 8)
    for part in record.parts:
        hidden = [case for case in first[part.name] if case.hidden]
        assert hidden, f"{exercise_id} {part.name}: no hidden case"
        assert all(case.label.startswith("hidden, ") for case in hidden)
        # A part that trains is graded on its hidden case alone (each case is a whole training).
        public_kept = 0 if part.training is not None else len(public[part.name])
        assert len(first[part.name]) == public_kept + len(hidden)
        for case, twin in zip(first[part.name], again[part.name], strict=True):
            assert (case.label, case.params) == (twin.label, twin.params)
            for name, array in case.inputs.items():
                assert (array == twin.inputs[name]).all()

    def arrays(cases):
        return [
            (repr(c.params), [a.tobytes() for a in c.inputs.values()]) for c in cases if c.hidden
        ]

    changed = any(arrays(first[part.name]) != arrays(other[part.name]) for part in record.parts)
    assert changed, f"{exercise_id}: another hidden seed gives the same hidden cases"


def planted_mistakes(exercise_id):
    """The table of planted mistakes of an exercise's own test file."""
    name = exercise_id.replace("-", "_")
    module = f"tests.grader.test_{'ex' if exercise_id[0].isdigit() else 'lab_'}{name}"
    return importlib.import_module(module).planted()


@pytest.mark.parametrize("exercise_id", EVERY_RECORD)
def test_every_named_mistake_is_planted(exercise_id):
    planted = {(p.part, p.mistake) for p in planted_mistakes(exercise_id)}
    record = EXERCISES[exercise_id]
    known = {(part.name, mistake.name) for part in record.parts for mistake in part.mistakes}
    assert not known - planted, f"{exercise_id}: named but never planted: {known - planted}"


@pytest.mark.parametrize("exercise_id", EVERY_PLANTED_TABLE)
def test_each_planted_mistake_fails_its_part_with_the_mistake_named(exercise_id, tmp_path):
    """All planted mistakes of an exercise graded in one run, each a submission of its own:
    each loses every point of its part, with a failing check that says the table's phrase and,
    where the table names it, the mistake recognised; and what the student reads of it, in
    English, holds no internal jargon (tests/support/jargon.py) and agrees with itself: no two
    lines of the run give contradictory fixes, and "fix X first" leads the lines of a part that
    calls the broken one (tests/support/advice.py)."""
    table = planted_mistakes(exercise_id)
    labels = [f"{index}. {planted.label}" for index, planted in enumerate(table)]
    assert len(set(labels)) == len(labels)
    record = EXERCISES[exercise_id]
    # A lab that trains: its source in the task's own order (no position code), where the
    # hand-built models' rules read it (tests/support/training.py; the code: test_position_code).
    with speaking("en"), plain_positions() if record.trains else contextlib.nullcontext():
        # Graded with the parts that call it (a lab that trains: alone, one training each),
        # so that the run's lines are those a student reads: "fix X first" among them.
        results = grade_many(
            exercise_id,
            {
                lab: (
                    p.source,
                    [p.part]
                    + ([] if record.trains else callers(record, p.source, p.part, tmp_path)),
                )
                for lab, p in zip(labels, table, strict=True)
            },
            tmp_path,
        )
        wrong = []
        for label, planted in zip(labels, table, strict=True):
            part = results[label].part(planted.part)
            messages = [check.message for check in failures(part)]
            jargon = shown_jargon(exercise_id, results[label], planted.source)
            if part.status not in (FAILED, ERROR) or part.score != 0.0:
                wrong.append(f"{label}: {part.status}, {part.score} points: {messages[:2]}")
            elif not all(any(phrase in m for m in messages) for phrase in planted.phrases):
                wrong.append(f"{label}: no failing check says {planted.phrases}: {messages[:3]}")
            elif planted.mistake and planted.mistake not in part.mistakes:
                wrong.append(f"{label}: recognised {part.mistakes}, not {planted.mistake!r}")
            elif jargon:  # tests/grader/test_jargon.py checks the Chinese
                wrong.append(f"{label}: internal jargon in what the student reads: {jargon}")
            # One piece of advice per mistake (issue 49): the run agrees with itself.
            wrong += [f"{label}: {why}" for why in conflicting_advice(record, results[label])]
    assert not wrong, "\n".join(wrong)
