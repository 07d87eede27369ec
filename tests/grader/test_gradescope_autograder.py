"""The Gradescope autograder as Gradescope runs it, end to end, on the demo class.

The zip is made by the real `grader release gradescope`, laid out as Gradescope's image lays it
out (`source/`, `run_autograder`, `submission/`, `results/` under one root, here a temporary
folder named by AUTOGRADER_ROOT), its `setup.sh` run for real (a real venv, real pip; with
`--system-site-packages`, through AUTOGRADER_VENV_OPTIONS, so that TensorFlow is not downloaded
again: 600 MB), and `run_autograder` run for each student of examples/submissions with the venv's
own Python, nothing of this checkout on its path. Every student must get the score `grader
batch` gives on the same folder. Earlier tests ran `run_autograder` with this interpreter and
missed what only the real layout shows: the venv inside the protected folder (a correct file that
imports `numpy.testing` scored 0) and the venv without a notebook reader.

As root (Gradescope runs both scripts as root) the children run as users of their own, as there.
About 2.5 minutes on two shared cores (the release and setup.sh 48 s, the batch 43 s, the 14
autograder runs 65 s) before the class was cut to one student of each kind that the layout can
change (6): marked slow.
"""

import csv
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader import sandbox
from grader.kit import KIT
from grader.notebook.generate import notebook_text
from grader.records import EXERCISES
from tests.support.gradescope_schema import validate
from tests.support.honest_imports import HEADER as HONEST_HEADER

pytestmark = [
    pytest.mark.slow,
    pytest.mark.ex8_2,
    pytest.mark.skipif(not sandbox.status()["complete"], reason="needs Landlock and seccomp"),
]

CLASS = KIT / "examples" / "submissions"
# A correct file that imports what the grader's helper had not loaded: a part of NumPy, and a
# package of the venv's own site-packages (here NumPy comes from the base interpreter's, through
# --system-site-packages; on Gradescope every package is in the venv). It failed with
# "Permission denied" when the venv lay in the protected autograder folder. SciPy, matplotlib
# and the rest of tests/support/honest_imports.py where installed (issue 45: no honest import is
# flagged on any path).
IMPORTS_MORE = "import numpy.testing\nimport numpy.polynomial\nimport pip\n" + HONEST_HEADER
# Students whose files do nothing the sandbox refuses (judy's notebook is not JSON).
HARMLESS = {"alice_notebook", "bob", "grace", "heidi"}


def clean_environment(**extra) -> dict:
    """The machine's environment as Gradescope's image has it: nothing of this checkout."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    }
    environment.update(extra)
    return environment


@pytest.fixture(scope="module")
def demo_class(tmp_path_factory) -> Path:
    """examples/submissions, plus alice's code as a notebook made by the kit's notebook tools
    and as a file that imports more of NumPy."""
    folder = tmp_path_factory.mktemp("class") / "submissions"
    shutil.copytree(CLASS, folder)
    (folder / "README.md").unlink()
    # One student of each kind the layout can change: these repeat kinds others show, and each
    # Gradescope run costs seconds: henry and ivan correct files written another way (alice's
    # own file is lena's below, with more imports), kim a notebook with a wrong scale (bob's
    # mistake), carol the untouched stub (a zero, as judy's is). Dave's crash, erin's hang and
    # frank's refused import are the sandbox's ways to zero, the same in any layout: the
    # release tests run a crash and an attack through run_autograder, test_batch.py a hang
    # (erin's alone cost 15 s of a spinning core twice here).
    for repeated in ("henry", "ivan", "kim", "alice", "carol", "dave", "erin", "frank"):
        shutil.rmtree(folder / repeated)
    alice = (CLASS / "alice" / "ex8_2.py").read_text(encoding="utf-8")
    (folder / "alice_notebook").mkdir()
    (folder / "alice_notebook" / "ex8_2.ipynb").write_text(
        notebook_text(EXERCISES["8-2"], alice), encoding="utf-8"
    )
    (folder / "lena").mkdir()
    (folder / "lena" / "ex8_2.py").write_text(IMPORTS_MORE + alice, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def batch_scores(demo_class, tmp_path_factory) -> dict[str, float]:
    out = tmp_path_factory.mktemp("batch")
    done = subprocess.run(
        [sys.executable, "-m", "grader.cli", "batch", str(demo_class), "-e", "8-2"]
        + ["--out", str(out), "--jobs", "2", "--no-similarity"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    lena = next(row for row in rows if row["student"] == "lena")
    assert lena["flags"] == "", lena  # an honest import is flagged here neither
    return {row["student"]: float(row["8-2"]) for row in rows}


@pytest.fixture(scope="module")
def autograder(tmp_path_factory) -> Path:
    """/autograder after Gradescope built the image: the zip in source/, setup.sh run."""
    made = tmp_path_factory.mktemp("gradescope")
    archive = made / "autograder.zip"
    done = subprocess.run(
        [sys.executable, "-m", "grader.cli", "release", "gradescope", str(archive), "-e", "8-2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    root = made / "autograder"
    with zipfile.ZipFile(archive) as bundle:
        bundle.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "run_autograder").chmod(0o755)
    setup = subprocess.run(
        ["bash", str(root / "source" / "setup.sh")],
        cwd=root / "source",
        env=clean_environment(
            AUTOGRADER_ROOT=str(root), AUTOGRADER_VENV_OPTIONS="--system-site-packages"
        ),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
    return root


def run_autograder(root: Path, student: Path) -> tuple[dict, str]:
    """One submission as Gradescope hands it over: the student's files in submission/ (an
    uploaded zip unpacked), results/ empty, run_autograder run from the root's folder."""
    for name in ("submission", "results"):
        shutil.rmtree(root / name, ignore_errors=True)
        (root / name).mkdir()
    if student.suffix == ".zip":
        with zipfile.ZipFile(student) as bundle:
            bundle.extractall(root / "submission")
    else:
        shutil.copytree(student, root / "submission", dirs_exist_ok=True)
    done = subprocess.run(
        [str(root / "run_autograder")],
        cwd=root,
        env=clean_environment(AUTOGRADER_ROOT=str(root)),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    text = (root / "results" / "results.json").read_text(encoding="utf-8")
    return validate(json.loads(text)), done.stdout + done.stderr


def test_the_venv_is_the_one_setup_made_with_a_notebook_reader(autograder):
    python = autograder / "venv" / "bin" / "python"
    done = subprocess.run(
        [str(python), "-c", "import grader, nbformat, sys; print(grader.__file__, sys.prefix)"],
        cwd=autograder / "source",
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    grader_file, prefix = done.stdout.split()
    assert Path(grader_file).is_relative_to(autograder / "source")
    assert Path(prefix) == autograder / "venv"


def test_every_student_gets_the_score_grader_batch_gives(autograder, demo_class, batch_scores):
    students = sorted(demo_class.iterdir())
    assert len(students) == len(batch_scores) == 6
    maximum = EXERCISES["8-2"].max_score
    # The class has full marks, partial ones and zeros: equal scores mean something.
    assert {maximum, 0.0} < set(batch_scores.values())
    for name in ("alice_notebook", "lena", "heidi", "grace"):
        assert batch_scores[name] == maximum, (name, batch_scores)
    differences = {}
    for student in students:
        name = student.name.removesuffix(".zip")
        results, log = run_autograder(autograder, student)
        outputs = results["output"] + "".join(t["output"] for t in results["tests"])
        assert "autograder failed" not in outputs.lower(), (name, log[-3000:])
        assert "Permission denied" not in outputs, (name, outputs[-3000:])
        if results["score"] != batch_scores[name]:
            differences[name] = (results["score"], batch_scores[name], outputs[-1500:])
        if name in HARMLESS or name == "lena":
            refused = [t for t in results["tests"] if "sandbox refused" in t["name"]]
            assert not refused, (name, refused)
    assert not differences, differences


def test_an_honest_import_is_not_flagged_with_every_package_in_the_venv(autograder, tmp_path):
    """Gradescope's own layout, which the venv above (--system-site-packages) does not show:
    every package installed in /autograder/venv itself, made here with uv from its cache (a
    second download of TensorFlow avoided). There the grader runs `python -m` from source/, and
    an import of any module not yet loaded listed that protected folder, flagged `open x2`."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not installed (.ci/run installs it)")
    root = tmp_path / "autograder"
    shutil.copytree(autograder / "source", root / "source")
    shutil.copy(autograder / "run_autograder", root / "run_autograder")
    python = os.path.realpath(sys._base_executable)
    venv = root / "venv"
    for command in (
        [uv, "venv", "-q", "--python", python, str(venv)],
        [uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python")]
        + ["-r", str(root / "source" / "requirements.txt")],
        [uv, "pip", "install", "-q", "--no-deps", "--python", str(venv / "bin" / "python")]
        + ["-e", str(root / "source")],
    ):
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    student = tmp_path / "honest"
    student.mkdir()
    alice = (CLASS / "alice" / "ex8_2.py").read_text(encoding="utf-8")
    # (uv puts no pip in a venv: the rest of IMPORTS_MORE, and more of what is installed.)
    imports = IMPORTS_MORE.replace("import pip\n", "")
    imports += "import keras.ops\nimport difflib\nimport email.utils\nimport nbformat\n"
    (student / "ex8_2.py").write_text(imports + alice, encoding="utf-8")
    results, log = run_autograder(root, student)
    assert results["score"] == EXERCISES["8-2"].max_score, log[-3000:]
    refused = [t for t in results["tests"] if "sandbox refused" in t["name"]]
    assert not refused, refused
