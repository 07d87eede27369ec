"""`grader check --results FILE` (grader.saved): a result is reused only for the same work, and
a file that is not one the grader wrote is graded anew, never read as a pass."""

import json

import pytest
from click.testing import CliRunner

from grader import cli, saved
from grader.engine.results import CheckResult, ExerciseResult, PartResult
from grader.records import EXERCISES

pytestmark = pytest.mark.ex8_2


def result_of(folder, passed=True) -> ExerciseResult:
    status = "passed" if passed else "failed"
    parts = [
        PartResult(p.name, p.points, status, [CheckResult("a check", passed)])
        for p in EXERCISES["8-2"].parts
    ]
    return ExerciseResult("8-2", parts, submission=str(folder / "ex8_2.py"))


@pytest.fixture
def work(tmp_path):
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "ex8_2.py").write_text("x = 1\n")
    (folder / "helper.py").write_text("y = 2\n")
    return folder


def test_a_kept_result_comes_back_for_the_same_work_only(work, tmp_path):
    kept = tmp_path / "results.json"
    key = saved.work_key("8-2", work, 0, None)
    saved.write(kept, result_of(work), key, ["imports-x"])
    result, flags = saved.read(kept, "8-2", key)
    assert result.to_dict() == result_of(work).to_dict() and flags == ["imports-x"]
    assert result.submission == str(work / "ex8_2.py")
    # Any file of the folder, the seed, the limit: another work, another key.
    assert saved.work_key("8-2", work, 1, None) != key
    assert saved.work_key("8-2", work, 0, 30.0) != key
    assert saved.work_key("8-1", work, 0, None) != key
    (work / "helper.py").write_text("y = 3\n")
    assert saved.work_key("8-2", work, 0, None) != key
    edited = saved.work_key("8-2", work, 0, None)
    assert saved.read(kept, "8-2", edited) is None
    # A cache of the interpreter's is no part of the work.
    (work / "__pycache__").mkdir()
    (work / "__pycache__" / "ex8_2.cpython-311.pyc").write_bytes(b"\0")
    assert saved.work_key("8-2", work, 0, None) == edited


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[]",
        '{"format": "attnkit-check-results/1"}',
        '{"format": "another/1", "results": {}}',
        '{"format": "attnkit-check-results/1", "results": {"8-2": {"key": 3}}}',
    ],
)
def test_a_file_the_grader_did_not_write_is_no_result_and_is_written_anew(work, tmp_path, text):
    kept = tmp_path / "results.json"
    kept.write_text(text)
    key = saved.work_key("8-2", work, 0, None)
    assert saved.read(kept, "8-2", key) is None
    saved.write(kept, result_of(work), key, [])
    assert saved.read(kept, "8-2", key) is not None


def test_each_exercise_keeps_its_own_result_in_one_file(work, tmp_path):
    kept = tmp_path / "results.json"
    key = saved.work_key("8-2", work, 0, None)
    saved.write(kept, result_of(work), key, [])
    other = ExerciseResult("8-1", [PartResult("lstm_param_count", 3, "passed", [])])
    saved.write(kept, other, "another key", [])
    assert set(json.loads(kept.read_text())["results"]) == {"8-2", "8-1"}
    assert saved.read(kept, "8-2", key) is not None
    assert saved.read(kept, "8-1", key) is None  # the key is that exercise's own


def test_check_grades_once_then_reports_each_part_until_the_file_changes(
    work, tmp_path, monkeypatch
):
    from grader import grading
    from grader.sandbox import processes

    graded = []

    def fake_grade(exercise_id, folder, parts=None, **kwargs):
        graded.append(parts)
        text = (folder / "ex8_2.py").read_text()
        return result_of(folder, passed="fixed" in text)

    monkeypatch.setattr(grading, "grade", fake_grade)
    monkeypatch.setattr(processes, "warm_up", lambda: None)
    kept = tmp_path / "kept" / "results.json"

    def check(part):
        words = ["check", "8-2", "--submission", str(work), "--part", part, "--results", kept]
        return CliRunner().invoke(cli.main, [str(w) for w in words])

    names = [p.name for p in EXERCISES["8-2"].parts]
    for name in names:
        done = check(name)
        assert done.exit_code == 1 and f"{name}" in done.output, done.output
    assert graded == [None]  # every part graded at once, by the first
    (work / "ex8_2.py").write_text("fixed = True\n")
    assert check(names[0]).exit_code == 0 and check(names[1]).exit_code == 0
    assert graded == [None, None]
