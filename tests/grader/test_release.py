"""Copies of the kit: a student kit without solutions, and a Gradescope autograder."""

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from grader import sandbox
from grader.engine.cases import make_cases
from grader.engine.compiled import NOT_JUDGED, SUFFIX, carried, case_key, load_record
from grader.engine.references import FixtureReference
from grader.grading import grade
from grader.instructor.course.release import (
    ReleaseError,
    refuse_answers,
    release_gradescope,
    release_student,
    solution_leaks,
)
from grader.instructor.course.stubs import package_dir
from grader.records import EXERCISES
from tests.grader.test_lab_masked_softmax import FROM_LENGTHS, SEQUENCE_MASK
from tests.support.gradescope_schema import read_results
from tests.support.grading import HEADER, SANDBOX, replace_function
from tests.support.released import student_kit_copy

pytestmark = pytest.mark.ex8_2

# A lab that trains a model is left out of a student kit (its gates are record code).
KIT_RECORDS = [record for record in EXERCISES.values() if not record.trains]
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
    return student_kit_copy(tmp_path_factory.mktemp("kit") / "attnkit-student")


def test_student_kit_has_no_solutions(student_kit):
    assert not (student_kit / "solutions").exists()
    assert solution_leaks(student_kit) == []
    assert (student_kit / "grader" / "fixtures" / "8-2.npz").is_file()
    assert '"solutions*"' not in (student_kit / "pyproject.toml").read_text()
    # The check itself can fail: the kit this test runs from does hold solutions.
    assert solution_leaks(package_dir("solutions").parent) != []


# Named mistakes in two exercises (one told apart by a `when`, one caught by properties too),
# the other parts of 8-2 right.
PLANTED_8_2 = replace_function(
    ALICE.read_text(),
    "softmax_jacobian",
    "    probs = ops.softmax(ops.convert_to_tensor(scores), axis=-2)\n"
    "    diagonal = probs[..., :, None] * ops.eye(ops.shape(probs)[-1], dtype=probs.dtype)\n"
    "    return diagonal - probs[..., :, None] * probs[..., None, :]",
)
PLANTED_MASKED_SOFTMAX = (
    HEADER
    + SEQUENCE_MASK.format(expression="np.arange(maxlen) <= valid_lens[..., None]")
    + FROM_LENGTHS.format(body="return ops.softmax(np.where(mask, scores, -1e6))")
    + "\ndef masked_softmax_from_mask(scores, mask):\n"
    "    weights = ops.softmax(ops.where(mask, -1e9, scores))\n"
    "    return ops.where(mask, 0.0, weights)\n"
)


def test_student_kit_grades_as_the_records_do(student_kit, tmp_path):
    (tmp_path / "ex8_2.py").write_text(PLANTED_8_2)
    (tmp_path / "lab_masked_softmax.py").write_text(PLANTED_MASKED_SOFTMAX)
    shutil.copy(student_kit / "exercises" / "ex8_1.py", tmp_path)  # the stub
    ids = ("8-2", "masked-softmax", "8-1")
    done = run_kit(
        student_kit, "-m", "grader.cli", "check", *ids, "--submission", str(tmp_path),
        "--format", "json",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    in_kit = [json.loads(line) for line in done.stdout.splitlines()]
    assert {p["status"] for p in in_kit[2]["parts"]} == {"not_implemented"}
    in_repo = [grade(i, tmp_path, sandbox=SANDBOX).to_dict() for i in ids[:2]]
    assert in_kit[:2] == in_repo  # scores, statuses, checks, mistakes and messages alike
    failed = [c for r in in_kit for p in r["parts"] for c in p["checks"] if not c["passed"]]
    messages = " ".join(c["message"] for c in failed)
    for explained in ("wrong axis", "you kept j <= valid_len", "True means keep", "uniform"):
        assert explained in messages  # the named mistakes' explanations
    assert any(c["name"].startswith("masked positions get zero weight") for c in failed)
    passed = {p["name"] for p in in_kit[0]["parts"] if p["status"] == "passed"}
    assert passed == {"ScaledDotScore", "BilinearScore", "variances", "bilinear_asymmetry"}


def test_compiled_records_hold_every_mistake_and_verdict_of_the_public_cases(student_kit):
    """Every record, every public case: the kit's mistake outputs are the records' (None where
    `when` says the case cannot tell), and its properties judge the expected output alike."""
    fixtures = student_kit / "grader" / "fixtures"
    told_apart = 0
    for record in KIT_RECORDS:
        compiled = load_record(fixtures / f"{record.id}{SUFFIX}")
        reference = FixtureReference(fixtures / f"{record.id}.npz")
        shipped, expected = reference.cases(record, 0), reference.expected(record, 0, {}, None)
        live = make_cases(record, 0)
        for part, mine in zip(record.parts, compiled.parts, strict=True):
            assert [m.name for m in mine.mistakes] == [m.name for m in part.mistakes]
            assert [m.explanation for m in mine.mistakes] == [m.explanation for m in part.mistakes]
            cases = zip(live[part.name], shipped[part.name], expected[part.name], strict=True)
            for case, copy, want in cases:
                assert case_key(case) == case_key(copy)
                if case.raises:  # a contract case: judged by the exception, not by outputs
                    continue
                for theirs, ours in zip(part.mistakes, mine.mistakes, strict=True):
                    should = theirs.output(case)
                    found = ours.output(copy)
                    assert (should is None) == (found is None), (record.id, theirs.name)
                    if should is not None:
                        np.testing.assert_array_equal(np.asarray(should, float), found)
                        told_apart += 1
                for theirs, ours in zip(carried(part), mine.properties, strict=True):
                    if not theirs.targets or case.target in theirs.targets:
                        output = np.asarray(want.output)
                        assert ours.check(copy, output) == theirs.check(case, output)
    assert told_apart > 100


def test_a_property_the_kit_cannot_judge_says_so(student_kit):
    """An output it has not seen, of the right shape, is not passed on the kit's word; another
    shape is left to the output check, as the records do."""
    fixtures = student_kit / "grader" / "fixtures"
    record = load_record(fixtures / f"masked-softmax{SUFFIX}")
    reference = FixtureReference(fixtures / "masked-softmax.npz")
    part = record.part("masked_softmax")
    case = reference.cases(record, 0)["masked_softmax"][0]
    want = np.asarray(reference.expected(record, 0, {}, None)["masked_softmax"][0].output)
    for prop in part.properties:
        assert prop.check(case, want) is None
        assert prop.check(case, want + 0.25) == NOT_JUDGED
        assert prop.check(case, want[..., :1]) is None


def test_a_kit_shows_its_verdicts_and_labels_in_the_students_language(student_kit):
    """A kit has no record code: its property verdicts are stored in every language and the
    words of its labels are registered where it loads a record."""
    from grader.i18n import speaking
    from grader.vocabulary.bundle import load_bundle
    from grader.vocabulary.labels import shown_label

    fixtures = student_kit / "grader" / "fixtures"
    meta, _arrays = load_bundle(fixtures / f"masked-softmax{SUFFIX}")
    assert "(a fully masked row)" in meta["label_texts"]
    record = load_record(fixtures / f"masked-softmax{SUFFIX}")
    reference = FixtureReference(fixtures / "masked-softmax.npz")
    part = record.part("masked_softmax")
    case = reference.cases(record, 0)["masked_softmax"][1]  # lengths per query, one of them 0
    uniform = part.mistakes[0].output(case)  # a fully masked row left uniform
    want = np.asarray(reference.expected(record, 0, {}, None)["masked_softmax"][1].output)
    with speaking("en"):
        english = [prop.check(case, uniform) for prop in part.properties]
    with speaking("zh"):
        chinese = [prop.check(case, uniform) for prop in part.properties]
        not_judged = part.properties[0].check(case, want + 0.25)
        label = shown_label(case.label)
    assert english[1].startswith("a fully masked row sums to 1")
    assert chinese[1].startswith("一个全被掩码的行") and "masked" not in chinese[1]
    assert not_judged.startswith("学生套件中未判定")
    assert "（有一整行被掩码）" in label and "fully" not in label


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


# Answers in other forms than a solution's lines, under other names, in other files: the
# softmax Jacobian of 8-2 in NumPy, and its ScaledDotScore as a layer.
PLANTED_ANSWERS = {
    "grader/engine/utils.py": """
import numpy as np


def helper_matrix(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    return p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]
""",
    "exercises/shapes.py": """
import keras
from keras import ops


class Mixer(keras.layers.Layer):
    def call(self, query, key):
        d = ops.cast(ops.shape(query)[-1], query.dtype)
        return ops.matmul(query, ops.transpose(key, (0, 2, 1))) / ops.sqrt(d)
""",
    # A module that cannot be told free of answers: it does not import from the kit alone.
    "exercises/hints.py": "from grader.reference.attention import softmax_jacobian\n",
}


def test_student_kit_has_no_executable_answer(student_kit):
    # No library (its layers answer exercises), no NumPy reference, no record code.
    assert not (student_kit / "attnkit").exists()
    assert not (student_kit / "grader" / "reference").exists()
    assert [p.name for p in (student_kit / "grader" / "records").glob("*.py")] == ["__init__.py"]
    assert len(list((student_kit / "grader" / "fixtures").glob("*" + SUFFIX))) == len(KIT_RECORDS)
    assert '"attnkit*"' not in (student_kit / "pyproject.toml").read_text()
    imports = re.compile(r"^\s*(from|import)\s+(grader\.reference|grader\.records\.|attnkit)", re.M)
    assert [p for p in student_kit.rglob("*.py") if imports.search(p.read_text())] == []
    # That every module of the kit imports from the kit alone, the release's answer probe
    # checks (it refuses a module it cannot import): see the next test.


def test_release_refuses_an_answer_planted_under_another_name(student_kit, tmp_path):
    # The kit with exercise 8-2 alone and its grading engine without the command line and the
    # instructor's tools (fewer targets and functions to try: a quicker probe).
    def trimmed(folder, names):
        keep = {
            "fixtures": ("8-2.",),
            "exercises": ("ex8_2.py", "__init__.py"),
            "instructor": ("review", "__init__.py"),
            "review": ("answer_probe.py", "__init__.py"),
            "grader": ("cli.py", "__main__.py"),
        }.get(Path(folder).name)
        if Path(folder).name == "grader":
            return [n for n in names if n in keep]
        return [n for n in names if keep and not n.startswith(keep)]

    kit = tmp_path / "kit"
    shutil.copytree(student_kit, kit, ignore=trimmed)
    for path, text in PLANTED_ANSWERS.items():
        (kit / path).write_text(text)
    assert solution_leaks(kit) == []  # no solution's lines: only what they do gives them away
    with pytest.raises(ReleaseError) as refused:
        refuse_answers(kit)
    message = str(refused.value)
    assert "3 answer(s) found" in message and not kit.exists()
    assert (
        "grader/engine/utils.py: helper_matrix reproduces the expected outputs of "
        "softmax_jacobian (exercise 8-2)" in message
    )
    assert "exercises/shapes.py: Mixer reproduces the expected outputs of ScaledDotScore" in message
    assert "module exercises.hints cannot be imported from the kit alone" in message
    assert "it imports grader.reference" in message


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


def test_gradescope_setup_pins_the_tested_versions_and_makes_its_own_python(autograder):
    from importlib.metadata import version

    source = autograder / "source"
    lines = (source / "requirements.txt").read_text().splitlines()
    pins = dict(line.split("==") for line in lines if "==" in line and ";" not in line)
    # Every run-time dependency of pyproject.toml, notebooks' reader included.
    for name in ("tensorflow", "keras", "numpy", "click", "nbformat", "copydetect"):
        assert pins[name] == version(name), name
    if sys.version_info >= (3, 11):  # for another Python: kept as written, marker and all
        assert "tomli>=2; python_version < '3.11'" in lines
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
    """Alice's correct code below an attack on the results and the grader: full marks, in the
    schema, from the grader, never the forged file. (One run for both: each costs a grader and
    its helper's start; tests/grader/test_gradescope_autograder.py runs more students.)"""
    results_path = autograder / "results" / "results.json"
    source = f"RESULTS = {str(results_path)!r}\n" + FORGER + "\n" + ALICE.read_text()
    results = gradescope_run(autograder, {"ex8_2.py": source})
    # Graded by the grader (the honest code below the attack), never the forged file.
    assert results["score"] == 10.0 and results["output"] != "forged"
    # The seed is the instructor's (extra_data, the log), never in the student's text.
    assert "seed" not in results["output"].lower()
    visible = [t for t in results["tests"] if t["visibility"] == "visible"]
    assert len(visible) == 5 and {t["status"] for t in visible} == {"passed"}
    # Derived from the submission with the autograder's key (reproducible: test_gradescope.py).
    from grader.instructor.gradescope import hidden_seed

    key = json.loads((autograder / "source" / "gradescope.json").read_text())["seed_key"]
    assert results["extra_data"]["hidden_seed"] == hidden_seed(key, autograder)
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
