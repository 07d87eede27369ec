"""`grader release actions`: a workflow GitHub Classroom's reporter accepts (parsed as YAML),
whose commands run here and exit 0 exactly when the part passes."""

import shlex
import subprocess
import sys

import pytest
import yaml
from click.testing import CliRunner

from grader import cli
from grader.engine.results import CheckResult, ExerciseResult, PartResult
from grader.instructor.course.stubs import package_dir
from grader.instructor.outputs.actions import actions_workflow
from grader.records import EXERCISES

pytestmark = pytest.mark.ex8_2

CHOSEN = [EXERCISES["8-1"], EXERCISES["8-2"]]


@pytest.fixture(scope="module")
def workflow():
    result = CliRunner().invoke(cli.main, ["release", "actions", "-e", "8-1", "-e", "8-2"])
    assert result.exit_code == 0, result.output
    return yaml.safe_load(result.output)


def grading_steps(workflow):
    job = workflow["jobs"]["run-autograding-tests"]
    return [s for s in job["steps"] if "autograding-command-grader" in s.get("uses", "")]


def as_run(command: str, temporary) -> list[str]:
    """A step's command as the runner runs it: its `${{ runner.temp }}` filled in."""
    return shlex.split(command.replace("${{ runner.temp }}", str(temporary)))


def test_named_and_guarded_as_the_reporter_requires(workflow):
    assert workflow["name"] == "Autograding Tests"
    assert list(workflow["jobs"]) == ["run-autograding-tests"]  # one job, that id
    job = workflow["jobs"]["run-autograding-tests"]
    assert job["if"] == "github.actor != 'github-classroom[bot]'"
    assert "push" in workflow["on"]


def test_one_test_per_part_with_its_points_and_every_result_reported(workflow):
    steps = grading_steps(workflow)
    expected = [(r.id, p.name, p.points) for r in CHOSEN for p in r.parts]
    got = [shlex.split(s["with"]["command"]) for s in steps]
    assert [(c[2], c[4], s["with"]["max-score"]) for c, s in zip(got, steps, strict=True)] == [
        (i, n, pts) for i, n, pts in expected
    ]
    assert all(c[:2] == ["grader", "check"] and c[3] == "--part" for c in got)
    # One results file for every test: the first of an exercise grades it, the rest read it.
    assert {tuple(c[5:]) for c in got} == {
        ("--results", "${{ runner.temp }}/attnkit-check-results.json")
    }
    reporter = workflow["jobs"]["run-autograding-tests"]["steps"][-1]
    runners = reporter["with"]["runners"].split(",")
    assert runners == [s["id"] for s in steps]
    assert reporter["env"] == {
        f"{r.upper()}_RESULTS": f"${{{{steps.{r}.outputs.result}}}}" for r in runners
    }
    assert all(r[0].isalpha() for r in runners)  # GitHub's rule for step ids


@pytest.mark.parametrize("passed,code", [(True, 0), (False, 1)])
def test_every_command_runs_and_its_exit_code_is_the_verdict(
    workflow, monkeypatch, tmp_path, passed, code
):
    """Each command as the command grader runs it (`grader check …`), the grading replaced by a
    result made here: the options and part names are the kit's, exit 0 only for a pass, and each
    exercise graded once, by its first test, every part at once."""
    from grader import grading
    from grader.sandbox import processes

    graded_calls = []

    def fake_grade(exercise_id, folder, parts=None, **kwargs):
        graded_calls.append((exercise_id, parts))
        status = "passed" if passed else "failed"
        points = {p.name: p.points for p in EXERCISES[exercise_id].parts}
        checks = [CheckResult("a check", passed)]
        graded = [PartResult(n, points[n], status, checks) for n in parts or points]
        return ExerciseResult(exercise_id, graded, submission=str(folder))

    monkeypatch.setattr(grading, "grade", fake_grade)
    monkeypatch.setattr(processes, "warm_up", lambda: None)
    for step in grading_steps(workflow):
        words = as_run(step["with"]["command"], tmp_path)
        result = CliRunner().invoke(cli.main, words[1:])
        assert result.exit_code == code, (words, result.output)
        record, part = EXERCISES[words[2]], words[4]
        others = [p.name for p in record.parts if p.name != part]
        assert f" {part} " in result.output, result.output
        assert not [name for name in others if f" {name} " in result.output], result.output
    assert graded_calls == [(record.id, None) for record in CHOSEN]


def test_a_command_runs_for_real_on_the_kit(workflow, tmp_path):
    """One command in a real shell, as the runner does, on the stubs: not implemented, exit 1."""
    command = next(
        s["with"]["command"] for s in grading_steps(workflow) if "variances" in s["with"]["command"]
    )
    done = subprocess.run(
        [sys.executable, "-m", "grader.cli", *as_run(command, tmp_path)[1:]],
        cwd=package_dir("exercises").parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1 and "not implemented" in done.stdout, done.stdout + done.stderr


def test_written_to_a_file_it_is_the_same_workflow(tmp_path):
    target = tmp_path / ".github" / "workflows" / "classroom.yml"
    result = CliRunner().invoke(cli.main, ["release", "actions", "-e", "8-2", "--out", target])
    assert result.exit_code == 0, result.output
    assert target.read_text() == actions_workflow([EXERCISES["8-2"]])


def test_every_part_is_worth_whole_points():
    """The command grader reads max-score with JavaScript's parseInt: 1.5 points would count
    as 1 in GitHub Classroom."""
    parts = [(r.id, p.name, p.points) for r in EXERCISES.values() for p in r.parts]
    assert [part for part in parts if part[2] != int(part[2])] == []
