"""The labs that train a model, graded the way a class is graded: `grader batch` and
Gradescope's path run each child under an output cap (4 MB), and a training part's report —
every stage's answers to every probe and the trained weights, about 6 MB a case for the
reference transformer — is the grader's own file written under that cap. Before the cap left
room for it, every correct transformer and seq2seq lab got 0 there ("more than the 4 MB output
cap") while `grader check`, which has no cap, gave 10/10. Each test trains the reference in
the sandbox (about 10 s of one core)."""

import csv
from pathlib import Path

import pytest

from grader.grading import TRAINING_RESULT_MB, output_cap_mb
from grader.instructor import gradescope
from grader.instructor.batch import BatchOptions, run_batch
from grader.instructor.course.stubs import package_dir
from grader.records import EXERCISES, get_exercise
from tests.support.gradescope_schema import validate

SOLUTIONS = package_dir("solutions")

pytestmark = pytest.mark.labs


def test_only_a_child_that_trains_gets_room_for_its_report():
    for record in EXERCISES.values():
        cap = output_cap_mb(4, record.parts)
        assert cap == (4 + TRAINING_RESULT_MB if record.trains else 4), record.id


def _graded_alone(tmp_path, record, source: bytes):
    """(the gradebook's row, the feedback) of a class of one student, ada, whose file for
    `record` is `source`, graded by `grader batch` at seed 2026."""
    (tmp_path / "class" / "ada").mkdir(parents=True)
    (tmp_path / "class" / "ada" / record.file).write_bytes(source)
    out = tmp_path / "out"
    run_batch(
        tmp_path / "class",
        BatchOptions([record.id], out, jobs=1, seed=2026, pictures=False, similarity=False),
    )
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        row = next(csv.DictReader(handle))
    return row, (out / "feedback" / "ada.md").read_text(encoding="utf-8")


def test_a_class_batch_gives_the_reference_transformer_full_marks(tmp_path):
    record = get_exercise("train-transformer")
    row, feedback = _graded_alone(tmp_path, record, (SOLUTIONS / record.file).read_bytes())
    assert row[record.id] == "10", feedback
    assert "output cap" not in feedback
    # Nothing the grader's own training does in the child is counted as the student's attempt
    # (its tf.function once read grader/sandbox/relearn.py's source: "refused-open").
    assert not row["flags"], row["flags"]


@pytest.mark.long
def test_an_attention_the_answers_never_read_loses_the_part(tmp_path):
    """A decoy (tests/support/submissions/lab_train_memn2n_decoy.py): every check of the
    student's own training passes it (10/10 before the grader trained a copy itself); the copy
    the grader trains never trains the decoy, which stays at chance."""
    record = get_exercise("train-memn2n")
    decoy = Path(__file__).parents[1] / "support" / "submissions" / "lab_train_memn2n_decoy.py"
    row, feedback = _graded_alone(tmp_path, record, decoy.read_bytes())
    assert row[record.id] == "0", feedback
    assert "trained by the grader's own gradient descent" in feedback
    assert "fails the check “attention on the supporting fact”" in feedback


@pytest.mark.long
def test_weights_trained_in_another_model_and_copied_in_lose_the_part(tmp_path):
    """The reference whose train_model trains a model built from other first weights and copies
    its weights in (tests/support/submissions/trained_elsewhere.py, appended to the reference):
    the grader's copy learns, and the answers are the reference's, but the weights graded keep
    nothing of the first values the model was built with."""
    record = get_exercise("train-memn2n")
    elsewhere = Path(__file__).parents[1] / "support" / "submissions" / "trained_elsewhere.py"
    source = (SOLUTIONS / record.file).read_bytes() + b"\n\n" + elsewhere.read_bytes()
    row, feedback = _graded_alone(tmp_path, record, source)
    assert row[record.id] == "0", feedback
    assert "keep almost nothing of the random values they started from" in feedback


def test_gradescope_gives_the_reference_seq2seq_full_marks(tmp_path):
    record = get_exercise("train-seq2seq")
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / record.file).write_bytes((SOLUTIONS / record.file).read_bytes())
    results = validate(gradescope.results_for(tmp_path / "submission", [record.id], 7, tmp_path))
    assert results["score"] == record.max_score, results["output"]
    assert "output cap" not in results["output"]
