"""Gradescope's results.json from every kind of part result, without running submitted code:
`grade` is replaced by a result made here, so each status and hidden failure is covered fast."""

import json

import pytest

from grader import sandbox
from grader.engine.results import CheckResult, ExerciseResult, PartResult
from grader.instructor import gradescope
from grader.records import EXERCISES
from grader.vocabulary.status import Status
from tests.support.gradescope_schema import validate

pytestmark = pytest.mark.ex8_2

RECORD = EXERCISES["8-2"]


def sandboxed(monkeypatch):
    """As on a machine with a full sandbox (no submitted code runs in these tests)."""
    state = {**sandbox.status(), "complete": True}
    monkeypatch.setattr(sandbox, "status", lambda: state)


def part_result(part, status, public_fail=0, hidden_fail=0):
    checks = [CheckResult(f"public {i}", False, "wrong values") for i in range(public_fail)]
    checks += [
        CheckResult(f"hidden {i}", False, "wrong on a hidden shape", hidden=True)
        for i in range(hidden_fail)
    ]
    checks.append(CheckResult("public ok", True))
    return PartResult(part.name, part.points, status, checks)


@pytest.fixture
def graded_as(monkeypatch, tmp_path):
    """results_for with `grade` answering the given part results, on a submission that exists."""
    sandboxed(monkeypatch)
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / RECORD.file).write_text("x = 1\n")

    def run(parts):
        def fake_grade(exercise_id, path, **kwargs):
            assert kwargs["hidden_seed"] == 1234
            return ExerciseResult(exercise_id, parts, submission=str(path))

        monkeypatch.setattr(gradescope, "grade", fake_grade)
        return validate(gradescope.results_for(tmp_path / "submission", ["8-2"], 1234, tmp_path))

    return run


def test_every_part_status_becomes_passed_or_failed_with_its_word_in_the_output(graded_as):
    parts = RECORD.parts
    statuses = [
        Status.PASSED,
        Status.FAILED,
        Status.NOT_IMPLEMENTED,
        Status.TIMEOUT,
        Status.ERROR,
    ]
    pairs = list(zip(parts, statuses, strict=True))
    results = graded_as([part_result(p, s, public_fail=s != Status.PASSED) for p, s in pairs])
    rows = {t["name"]: t for t in results["tests"]}
    for part, status in pairs:
        row = rows[f"8-2 {part.name}"]
        assert row["status"] == ("passed" if status == Status.PASSED else "failed")
        assert row["output"].splitlines()[0] == gradescope.STATUS_WORDS[status]
    assert results["score"] == parts[0].points
    assert results["extra_data"] == {"hidden_seed": 1234}


def test_hidden_failures_cost_the_part_and_their_row_cannot_read_as_passed(graded_as):
    parts = RECORD.parts
    results = graded_as(
        [part_result(parts[0], Status.FAILED, hidden_fail=3)]
        + [part_result(p, Status.PASSED) for p in parts[1:]]
    )
    name = f"8-2 {parts[0].name}"
    rows = {t["name"]: t for t in results["tests"]}
    assert rows[name]["score"] == 0.0 and rows[name]["status"] == "failed"
    assert "3 hidden checks failed" in rows[name]["output"]
    assert "wrong on a hidden shape" not in rows[name]["output"]  # not before publishing
    details = rows[f"{name} (hidden checks)"]
    assert details["visibility"] == "after_published" and details["status"] == "failed"
    assert "wrong on a hidden shape" in details["output"]
    assert results["score"] == RECORD.max_score - parts[0].points
    for row in results["tests"]:  # no row says passed while listing a failure
        assert row["status"] == "failed" or "wrong" not in row["output"]


def test_a_missing_file_is_failed_with_full_points_possible(monkeypatch, tmp_path):
    sandboxed(monkeypatch)
    (tmp_path / "submission").mkdir()
    results = validate(gradescope.results_for(tmp_path / "submission", ["8-2"], 1, tmp_path))
    assert [t["max_score"] for t in results["tests"]] == [float(p.points) for p in RECORD.parts]
    assert {t["status"] for t in results["tests"]} == {"failed"}
    assert all(t["output"].startswith("missing:") for t in results["tests"])


def test_a_lone_file_of_a_near_name_is_graded_and_the_student_told_its_name(monkeypatch, tmp_path):
    sandboxed(monkeypatch)
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "Ex8_2 (1).py").write_text("x = 1\n")
    graded = []

    def fake_grade(exercise_id, path, **kwargs):
        graded.append(path.name)
        parts = [part_result(p, Status.PASSED) for p in RECORD.parts]
        return ExerciseResult(exercise_id, parts, submission=str(path))

    monkeypatch.setattr(gradescope, "grade", fake_grade)
    results = validate(gradescope.results_for(tmp_path / "submission", ["8-2"], 1, tmp_path))
    assert graded == [RECORD.file] and results["score"] == RECORD.max_score
    assert f"Ex8_2 (1).py was graded as {RECORD.file}" in results["output"]


def write_metadata(root, assignment, submission):
    metadata = {"id": submission, "assignment": {"id": assignment}, "users": []}
    (root / "submission_metadata.json").write_text(json.dumps(metadata))


def test_the_hidden_seed_is_reproducible_per_submission_and_keyed(tmp_path):
    write_metadata(tmp_path, 77, 1001)
    seed = gradescope.hidden_seed("key-a", tmp_path)
    assert gradescope.hidden_seed("key-a", tmp_path) == seed  # a regrade
    assert 0 <= seed < 2**31
    assert gradescope.hidden_seed("key-b", tmp_path) != seed  # unknown without the key
    write_metadata(tmp_path, 77, 1002)
    assert gradescope.hidden_seed("key-a", tmp_path) != seed  # another submission
    write_metadata(tmp_path, 78, 1001)
    assert gradescope.hidden_seed("key-a", tmp_path) != seed  # another assignment


def test_without_metadata_the_seed_follows_the_submitted_files(tmp_path):
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "ex8_2.py").write_text("a = 1\n")
    seed = gradescope.hidden_seed("key", tmp_path)
    assert gradescope.hidden_seed("key", tmp_path) == seed
    (tmp_path / "submission" / "ex8_2.py").write_text("a = 2\n")
    assert gradescope.hidden_seed("key", tmp_path) != seed


def test_the_schema_rejects_what_the_old_autograder_wrote():
    from jsonschema import ValidationError

    for bad in (
        {"score": 0.0, "tests": [{"name": "a", "score": 0.0, "status": "timeout"}]},
        {"score": 0.0, "tests": [{"name": "a", "score": 0.0, "visibility": "later"}]},
        {"tests": [{"name": "a", "max_score": 1.0}]},
    ):
        with pytest.raises(ValidationError):
            validate(bad)


def test_a_failure_of_the_grader_on_one_part_costs_no_other_part(monkeypatch, tmp_path, capsys):
    """A bug of ours judging one part (the r8 red team's: the mistake search raised on an
    ordinary wrong answer) once failed the whole autograder: 0.0 for every part. Now that part
    alone is not graded, said so, the traceback in the instructor's log."""
    import shutil
    from pathlib import Path

    from grader.engine import judging

    sandboxed(monkeypatch)
    (tmp_path / "submission").mkdir()
    solution = Path(__file__).resolve().parents[2] / "solutions" / RECORD.file
    shutil.copy(solution, tmp_path / "submission" / RECORD.file)
    broken = RECORD.parts[-1].name
    original = judging.judge_part

    def judge_part(part, *args, **kwargs):
        if part.name == broken:
            raise ValueError("a bug of the grader's")
        return original(part, *args, **kwargs)

    monkeypatch.setattr(judging, "judge_part", judge_part)
    results = validate(gradescope.results_for(tmp_path / "submission", ["8-2"], 7, tmp_path))
    rows = {t["name"]: t for t in results["tests"]}
    assert results["score"] == RECORD.max_score - RECORD.parts[-1].points
    assert rows[f"8-2 {broken}"]["score"] == 0.0
    assert "grader" in rows[f"8-2 {broken}"]["output"]
    assert "a bug of the grader's" not in json.dumps(results)  # the traceback is not the student's
    assert "a bug of the grader's" in capsys.readouterr().err


def test_a_failure_of_the_grader_on_one_exercise_costs_no_other_exercise(
    monkeypatch, tmp_path, capsys
):
    """Anything of ours that breaks grading one exercise (not only its judging) leaves that
    exercise's parts not graded, said so, and the other exercises graded."""
    sandboxed(monkeypatch)
    (tmp_path / "submission").mkdir()
    for exercise_id in ("8-2", "8-3"):
        (tmp_path / "submission" / EXERCISES[exercise_id].file).write_text("x = 1\n")

    def fake_grade(exercise_id, path, **kwargs):
        if exercise_id == "8-3":
            raise RuntimeError("a bug of the grader's")
        parts = [part_result(p, Status.PASSED) for p in RECORD.parts]
        return ExerciseResult(exercise_id, parts, submission=str(path))

    monkeypatch.setattr(gradescope, "grade", fake_grade)
    results = validate(gradescope.results_for(tmp_path / "submission", ["8-2", "8-3"], 1, tmp_path))
    assert results["score"] == RECORD.max_score
    failed = [t for t in results["tests"] if t["name"].startswith("8-3 ")]
    assert len(failed) == len(EXERCISES["8-3"].parts)
    assert all(t["score"] == 0.0 and "grader" in t["output"] for t in failed)
    assert "a bug of the grader's" not in json.dumps(results)
    assert "a bug of the grader's" in capsys.readouterr().err
