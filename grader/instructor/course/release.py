"""Copies of the kit for other places: students (no solutions, fixtures instead) and Gradescope
(an autograder zip that always writes a results file)."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from grader.engine.compiled import SUFFIX, write_compiled
from grader.engine.references import LiveReference, reference_outputs, write_fixture
from grader.i18n import language
from grader.instructor.course.stubs import BEGIN, END
from grader.kit import KIT
from grader.records import EXERCISES, get_exercise

IGNORED = shutil.ignore_patterns(
    "__pycache__", "*.pyc", "*.egg-info", ".pytest_cache", ".ruff_cache", "fixtures"
)
# A student kit has the stubs and the grader. Not attnkit: the stubs import none of it (a test
# checks), and its layers answer exercises (attnkit/scoring/dot.py is a ScaledDotScore).
STUDENT_PARTS = ("grader", "exercises")
# Nor, of the grader, the answers in NumPy (grader/reference), the records that call them (the
# kit has them compiled to data, grader.engine.compiled) and the records' own vocabulary.
LEFT_OUT_OF_STUDENT_KIT = (
    "grader/reference",
    "grader/engine/sampling.py",
    "grader/engine/selectors.py",
)
KEPT_OF_RECORDS = ("__init__.py",)

# The kit's own README: the instructor's (with `--submission solutions`, pytest, examples/) would
# send students to files a kit does not have.
STUDENT_README = """# Attention exercises (NNDL chapter 8)

## Install

With Python 3.10 or newer, in a virtual environment if you like:

```bash
pip install -e .
```

## Work on an exercise

1. `grader list` shows the exercises; `grader show 8-2` explains one: the task, the file to
   edit (`exercises/ex8_2.py`), its parts and points.
2. Fill in the bodies that raise `NotImplementedError`. The docstrings say what each function
   must return, with shapes.
3. `grader check 8-2` grades your file: outputs and gradients, on several shapes. A part scores
   its points when all its checks pass; a failure says which check, where, and what came back.
   `--verbose` lists every check. Written answers go in `exercises/answers/<id>.md`.

Exit status: 0 when every part passed, 1 when some part did not.
{notebooks}"""


class ReleaseError(RuntimeError):
    pass


def release_student(destination: Path, seed: int = 0) -> Path:
    """A kit a student can install and grade with: stubs, the grader, and its records and
    public fixtures as data; no executable answer (see `answer_leaks`)."""
    destination = Path(destination)
    if destination.exists() and any(destination.iterdir()):
        raise ReleaseError(f"{destination} is not empty: choose a new folder")
    destination.mkdir(parents=True, exist_ok=True)
    for name in STUDENT_PARTS:
        source = KIT / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=_student_ignore)
        else:
            shutil.copy2(source, destination / name)
    notebooks = ""
    if (KIT / "notebooks").is_dir():
        shutil.copytree(KIT / "notebooks", destination / "notebooks", ignore=IGNORED)
        notebooks = "\n## Notebooks\n\n`notebooks/` has the chapter's notebooks (`jupyter lab`).\n"
    (destination / "README.md").write_text(
        STUDENT_README.format(notebooks=notebooks), encoding="utf-8"
    )
    pyproject = (KIT / "pyproject.toml").read_text(encoding="utf-8")
    pyproject = pyproject.replace(', "solutions*"', "")
    pyproject = pyproject.replace('"attnkit*", ', "")
    (destination / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    fixtures = destination / "grader" / "fixtures"
    fixtures.mkdir()
    # A lab that trains a model is judged by its record's gates, code a kit does not ship: its
    # stub is in the kit, and the instructor's grader grades it.
    records = [record for record in EXERCISES.values() if not record.trains]
    outputs = reference_outputs(records, seed, LiveReference(KIT / "solutions"))
    for record in records:
        cases, expected = outputs[record.id]
        write_fixture(record, seed, fixtures / f"{record.id}.npz", None, outputs[record.id])
        write_compiled(record, cases, expected, fixtures / f"{record.id}{SUFFIX}")
    refuse_answers(destination)
    return destination


def refuse_answers(kit: Path) -> None:
    """Remove `kit` and raise ReleaseError, naming what was found, when it holds an answer:
    a solution's lines (`solution_leaks`) or a function that behaves as one (`answer_leaks`)."""
    leaks = [f"{path}: lines of a solution" for path in solution_leaks(kit)]
    leaks += answer_leaks(kit)
    if leaks:
        shutil.rmtree(kit)
        raise ReleaseError(
            f"{len(leaks)} answer(s) found in the student kit, so it was removed; take them "
            "out of the kit's sources and release again: " + "; ".join(leaks[:8])
        )


def _student_ignore(directory: str, names: list[str]) -> set[str]:
    ignored = set(IGNORED(directory, names))
    folder = Path(directory).resolve().relative_to(KIT.resolve()).as_posix()
    for name in names:
        if f"{folder}/{name}" in LEFT_OUT_OF_STUDENT_KIT:
            ignored.add(name)
        elif folder == "grader/records" and name not in KEPT_OF_RECORDS:
            ignored.add(name)
    return ignored


def answer_blocks() -> list[list[str]]:
    """The lines of every answer block in solutions/, stripped, blank lines dropped."""
    blocks = []
    for record in EXERCISES.values():
        block = None
        for line in (KIT / "solutions" / record.file).read_text(encoding="utf-8").splitlines():
            if BEGIN.match(line):
                block = []
            elif END.match(line):
                blocks.append(block or [])
                block = None
            elif block is not None and line.strip():
                block.append(line.strip())
    return blocks


def solution_leaks(folder: Path) -> list[str]:
    """Files under `folder` holding a solutions folder, an answer marker, or two consecutive
    lines of an answer (one line alone is too often an ordinary line of code to tell)."""
    pairs = {
        (first, second)
        for block in answer_blocks()
        for first, second in zip(block, block[1:], strict=False)
        if len(first) + len(second) >= 40
    }
    leaks = [str(p) for p in folder.rglob("solutions") if p.is_dir()]
    for path in folder.rglob("*.py"):
        lines = [
            line.strip()
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
            if line.strip()
        ]
        if any(BEGIN.match(line) for line in lines) or pairs & set(
            zip(lines, lines[1:], strict=False)
        ):
            leaks.append(str(path))
    return leaks


def answer_leaks(kit: Path, timeout: float = 600.0) -> list[str]:
    """Answers in `kit` found by what they do (grader.instructor.review.answer_probe, run in a child
    with only the kit on its path): each function or class of any of its modules that
    reproduces the expected outputs of an exercise target's public cases, and each module that
    cannot be imported (so cannot be told free of answers)."""
    kit = Path(kit).resolve()
    environment = {
        key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")
    }
    with tempfile.TemporaryDirectory(prefix="attnkit-probe-") as scratch:
        environment.update(PYTHONPATH=str(kit), HOME=scratch, PYTHONDONTWRITEBYTECODE="1")
        try:
            done = subprocess.run(
                [sys.executable, "-m", "grader.instructor.review.answer_probe", str(kit)],
                cwd=scratch,
                env=environment,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return [f"the answer probe did not finish in {timeout:g} s"]
    found, finished = [], False
    for line in done.stdout.splitlines():
        try:
            report = json.loads(line)
        except ValueError:
            continue  # something a probed module printed
        if not isinstance(report, dict):
            continue
        if report.get("done") is True:
            finished = True
        elif "unimportable" in report:
            found.append(
                f"module {report['module']} cannot be imported from the kit alone, so it cannot be "
                f"checked for answers: {report['unimportable']}"
            )
        elif "file" in report:
            found.append(
                f"{report['file']}: {report['name']} reproduces the expected outputs of "
                f"{report['target']} (exercise {', '.join(report['exercises'])})"
            )
    if not finished:
        tail = done.stderr.strip()[-1500:]
        found.append(f"the answer probe stopped (exit status {done.returncode}): {tail}")
    return found


RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for each submission. It always leaves a results.json behind.
root="${AUTOGRADER_ROOT:-/autograder}"
python="${PYTHON:-$root/venv/bin/python}"
mkdir -p "$root/results"
cd "$root/source" || exit 0
failed='{"score": 0.0, "tests": [], "output": "The autograder failed before grading."}'
if ! "$python" -m grader.instructor.gradescope --root "$root"; then
  [ -s "$root/results/results.json" ] || printf '%s\\n' "$failed" > "$root/results/results.json"
fi
exit 0
"""

# The kit's run-time dependencies are pyproject.toml's `dependencies`, every one of them: a list
# of our own (tensorflow, keras, numpy, click) left out nbformat, so Gradescope could not read a
# notebook. setup.sh installs exactly the versions installed where the autograder was made.
REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def runtime_requirements() -> list[str]:
    """pyproject.toml's `dependencies` as written (name, version range, marker)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    with open(KIT / "pyproject.toml", "rb") as handle:
        return list(tomllib.load(handle)["project"]["dependencies"])


SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when the autograder image is built. Its base images are
# Ubuntu with no promise of pip or of a recent Python: install Python {python} from apt when it
# is missing, grade in a virtual environment of its own (Ubuntu 24.04's Python refuses plain
# pip installs), and install exactly the versions the kit was tested with (requirements.txt).
set -euo pipefail
root="${{AUTOGRADER_ROOT:-/autograder}}"
python="python{python}"
if ! command -v "$python" >/dev/null 2>&1 || ! "$python" -c "import venv, ensurepip" 2>/dev/null
then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends "$python" "$python-venv" ||
    {{ echo "setup.sh: Python {python} is not in this image's apt sources; choose a" \\
        "Gradescope base image that has it (the kit was tested with it)" >&2; exit 1; }}
fi
# The venv lies in /autograder, which the autograder protects from submitted code; the sandbox
# lets children read the Python installation wherever it lies (grader.sandbox.grants).
# AUTOGRADER_VENV_OPTIONS: more options of `venv`, such as --system-site-packages on an image
# that already has the tested TensorFlow (the kit's end-to-end test does so).
"$python" -m venv ${{AUTOGRADER_VENV_OPTIONS:-}} "$root/venv"
"$root/venv/bin/python" -m pip install --upgrade pip
"$root/venv/bin/python" -m pip install -r "$root/source/requirements.txt"
"$root/venv/bin/python" -m pip install --no-deps -e "$root/source"
# What grading imports, notebooks' reader included: a missing package fails here, not a student.
# Without TensorFlow's start-up lines in the log (grader.quiet).
"$root/venv/bin/python" -c "import grader.quiet; grader.quiet.install()
import grader.instructor.gradescope, grader.notebook.extract, keras"
"""


def tested_versions() -> dict[str, str]:
    """Python's version as major.minor (`python`), and `requirements`: requirements.txt's lines,
    each run-time dependency pinned to the version installed here (what the kit was tested
    with), its marker kept; one whose marker excludes this Python (tomli on 3.11) as written."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    lines = []
    for requirement in runtime_requirements():
        spec, _, marker = requirement.partition(";")
        name = REQUIREMENT_NAME.match(spec).group(1)
        try:
            pinned = f"{name}=={version(name)}"
        except PackageNotFoundError as error:
            if marker.strip():  # for another Python than this one
                lines.append(requirement.strip())
                continue
            raise ReleaseError(
                f"{name} is not installed here, so its tested version is unknown: install the "
                "kit (pip install -e .) before making the autograder"
            ) from error
        lines.append(f"{pinned}; {marker.strip()}" if marker.strip() else pinned)
    return {
        "python": ".".join(platform.python_version_tuple()[:2]),
        "requirements": "".join(f"{line}\n" for line in lines),
    }


def release_gradescope(target: Path, exercises: list[str], unsandboxed: bool = False) -> Path:
    """An autograder zip for Gradescope: the kit with its solutions, setup.sh, run_autograder.

    The autograder refuses to run submitted code where it finds no sandbox (grader.sandbox),
    unless `unsandboxed`."""
    records = [get_exercise(e) for e in exercises] or list(EXERCISES.values())
    target = Path(target)
    if target.suffix != ".zip":
        raise ReleaseError(f"{target} must end in .zip")
    with tempfile.TemporaryDirectory(prefix="attnkit-gradescope-") as scratch:
        root = Path(scratch)
        for name in ("attnkit", "grader", "exercises", "solutions", "README.md", "pyproject.toml"):
            source = KIT / name
            if source.is_dir():
                shutil.copytree(source, root / name, ignore=IGNORED)
            else:
                shutil.copy2(source, root / name)
        config = {
            "exercises": [r.id for r in records],
            "unsandboxed": unsandboxed,
            # Keys the hidden-check seed of each submission (grader.instructor.gradescope).
            "seed_key": secrets.token_hex(16),
            # The students' pages in the language of the release.
            "lang": language(),
        }
        (root / "gradescope.json").write_text(json.dumps(config))
        versions = tested_versions()
        (root / "requirements.txt").write_text(versions["requirements"])
        setup = SETUP.format(python=versions["python"])
        for name, text in (("run_autograder", RUN_AUTOGRADER), ("setup.sh", setup)):
            (root / name).write_text(text)
            (root / name).chmod(0o755)
        target.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    info = zipfile.ZipInfo.from_file(path, path.relative_to(root).as_posix())
                    info.compress_type = zipfile.ZIP_DEFLATED
                    archive.writestr(info, path.read_bytes())
    return target
