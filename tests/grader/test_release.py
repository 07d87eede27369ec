"""Copies of the kit: a student kit without solutions, and a Gradescope autograder."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader import sandbox
from grader.instructor.release import (
    ReleaseError,
    release_gradescope,
    release_student,
    solution_leaks,
)
from grader.instructor.stubs import package_dir
from tests.support.gradescope_schema import read_results

pytestmark = pytest.mark.ex8_2

ALICE = package_dir("examples") / "submissions" / "alice" / "ex8_2.py"


def run_kit(kit: Path, *args, env=None, cwd=None):
    environment = {**os.environ, "PYTHONPATH": str(kit), **(env or {})}
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd or kit,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def student_kit(tmp_path_factory):
    return release_student(tmp_path_factory.mktemp("kit") / "attnkit-student")


def test_student_kit_has_no_solutions(student_kit):
    assert not (student_kit / "solutions").exists()
    assert solution_leaks(student_kit) == []
    assert (student_kit / "grader" / "fixtures" / "8-2.npz").is_file()
    assert '"solutions*"' not in (student_kit / "pyproject.toml").read_text()
    # The check itself can fail: the kit this test runs from does hold solutions.
    assert solution_leaks(package_dir("solutions").parent) != []


def test_student_kit_grades_from_its_fixtures(student_kit):
    stub = run_kit(student_kit, "-m", "grader.cli", "check", "8-2", "--format", "json")
    assert stub.returncode == 1, stub.stderr
    assert {p["status"] for p in json.loads(stub.stdout)["parts"]} == {"not_implemented"}

    (student_kit / "exercises" / "ex8_2.py").write_text(ALICE.read_text())
    solved = run_kit(student_kit, "-m", "grader.cli", "check", "8-2", "--format", "json")
    assert solved.returncode == 0, solved.stdout + solved.stderr
    assert json.loads(solved.stdout)["score"] == 10.0


def test_student_kit_has_its_own_readme_and_stubs_explains_itself(student_kit):
    readme = (student_kit / "README.md").read_text()
    assert "grader check" in readme and "pip install -e ." in readme
    # Nothing a kit does not ship: the reference, the test suite, the demo class.
    for absent in ("--submission solutions", "pytest", "examples/", "grader batch"):
        assert absent not in readme
    before = (student_kit / "exercises" / "ex8_2.py").read_text()
    done = run_kit(student_kit, "-m", "grader.cli", "stubs")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "student kit" in done.stderr and "grader check" in done.stderr
    assert (student_kit / "exercises" / "ex8_2.py").read_text() == before  # the work is kept


def test_release_refuses_a_folder_in_use(tmp_path):
    (tmp_path / "something").write_text("x")
    with pytest.raises(ReleaseError, match="not empty"):
        release_student(tmp_path)


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    root = tmp_path_factory.mktemp("autograder")
    archive = release_gradescope(root / "autograder.zip", ["8-2"])
    with zipfile.ZipFile(archive) as bundle:
        names = bundle.namelist()
        bundle.extractall(root / "source")
    assert {"setup.sh", "run_autograder", "gradescope.json", "solutions/ex8_2.py"} <= set(names)
    assert "requirements.txt" in names
    return root


def gradescope_run(autograder: Path, files: dict[str, str], python=sys.executable) -> dict:
    submission = autograder / "submission"
    results = autograder / "results" / "results.json"
    results.unlink(missing_ok=True)
    if submission.exists():
        for path in submission.iterdir():
            path.unlink()
    submission.mkdir(exist_ok=True)
    for name, text in files.items():
        (submission / name).write_text(text)
    done = subprocess.run(
        ["bash", str(autograder / "source" / "run_autograder")],
        env={
            **os.environ,
            "AUTOGRADER_ROOT": str(autograder),
            "PYTHON": python,
            "PYTHONPATH": str(autograder / "source"),
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return read_results(results)


def test_gradescope_full_marks_in_its_schema(autograder):
    results = gradescope_run(autograder, {"ex8_2.py": ALICE.read_text()})
    assert results["score"] == 10.0
    # The seed is the instructor's (extra_data, the log), never in the student's text.
    assert "seed" not in results["output"].lower()
    seed = results["extra_data"]["hidden_seed"]
    visible = [t for t in results["tests"] if t["visibility"] == "visible"]
    assert len(visible) == 5 and {t["status"] for t in visible} == {"passed"}
    # Derived from the submission with the autograder's key (reproducible: test_gradescope.py).
    from grader.instructor.gradescope import hidden_seed

    key = json.loads((autograder / "source" / "gradescope.json").read_text())["seed_key"]
    assert seed == hidden_seed(key, autograder)


def test_gradescope_setup_pins_the_tested_versions_and_makes_its_own_python(autograder):
    from importlib.metadata import version

    source = autograder / "source"
    pins = dict(line.split("==") for line in (source / "requirements.txt").read_text().split())
    assert pins == {name: version(name) for name in ("tensorflow", "keras", "numpy", "click")}
    setup = (source / "setup.sh").read_text()
    assert subprocess.run(["bash", "-n", str(source / "setup.sh")]).returncode == 0
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert f'python="python{minor}"' in setup and "apt-get install" in setup
    assert "-m venv" in setup and "requirements.txt" in setup
    assert "$root/venv/bin/python" in (source / "run_autograder").read_text()


@pytest.mark.parametrize(
    "files,phrase",
    [
        ({"ex8_2.py": "def oops(:\n"}, "SyntaxError"),
        ({"notes.txt": "forgot the code"}, "no ex8_2.py (or ex8_2.ipynb) in the submission"),
        ({"ex8_2.py": "import os\nos._exit(1)\n"}, "exited with status 1"),
    ],
)
def test_gradescope_reports_broken_submissions_with_zero(autograder, files, phrase):
    results = gradescope_run(autograder, files)
    assert results["score"] == 0.0
    assert any(phrase in test["output"] for test in results["tests"])
    assert {t["status"] for t in results["tests"]} == {"failed"}


FORGER = """
import json, os, signal
forged = {"score": 100.0, "tests": [], "output": "forged"}
for folder, _, files in os.walk(os.environ.get("AUTOGRADER_ROOT", "/autograder")):
    for name in files:
        try:
            open(os.path.join(folder, name), "rb").read(1)  # the expected results, say
            pass  # reading the kit or the results is refused (and flagged)
        except OSError:
            pass
for target in (RESULTS, os.path.join(os.path.dirname(RESULTS), "partial.json")):
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as handle:
            json.dump(forged, handle)
    except OSError:
        pass
try:
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
except OSError:
    pids = []
for pid in [p for p in pids if p != os.getpid()] + [os.getppid(), -1]:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
"""


@pytest.mark.skipif(not sandbox.status()["complete"], reason="needs Landlock and seccomp")
def test_gradescope_results_cannot_be_forged_nor_the_grader_killed(autograder):
    results_path = autograder / "results" / "results.json"
    source = f"RESULTS = {str(results_path)!r}\n" + FORGER + "\n" + ALICE.read_text()
    results = gradescope_run(autograder, {"ex8_2.py": source})
    # Graded by the grader (the honest code below the attack), never the forged file.
    assert results["score"] == 10.0 and results["output"] != "forged"
    assert not (autograder / "results" / "partial.json").exists()
    flagged = [t for t in results["tests"] if t["visibility"] == "hidden"]
    assert flagged and "signal" in flagged[0]["output"] and "open" in flagged[0]["output"]
    assert all(t["max_score"] == 0.0 for t in flagged)


def test_gradescope_writes_results_even_when_the_grader_cannot_run(autograder):
    results = gradescope_run(autograder, {"ex8_2.py": ALICE.read_text()}, python="/bin/false")
    assert results["score"] == 0.0 and "autograder failed" in results["output"]


def test_gradescope_refuses_to_run_code_without_a_sandbox_unless_released_so(tmp_path, monkeypatch):
    from grader.instructor import gradescope

    missing = {**sandbox.status(), "files": False, "landlock_abi": 0, "complete": False}
    monkeypatch.setattr(sandbox, "status", lambda: missing)
    (tmp_path / "source").mkdir()
    (tmp_path / "submission").mkdir()
    planted = tmp_path / "ran"
    (tmp_path / "submission" / "ex8_2.py").write_text(f"open({str(planted)!r}, 'w')\n")
    (tmp_path / "source" / "gradescope.json").write_text(
        json.dumps({"exercises": ["8-2"], "seed_key": "k"})
    )
    assert gradescope.main(["--root", str(tmp_path)]) == 0
    results = read_results(tmp_path / "results" / "results.json")
    assert results["score"] == 0.0 and "--unsandboxed" in results["output"]
    assert "NOT sandboxed" in results["output"] and not planted.exists()
