"""The GitHub Actions workflow as a runner runs it, end to end, on students of the demo class.

The template repository is what `grader release student` writes, with the workflow of
`grader release actions -e 8-2` in `.github/workflows/`; a student's repository is that
template with their file of examples/submissions in `exercises/` (bob's `ex8_2.py`), committed
and cloned, so that its files are written as a checkout writes them (all at once: no file is
newer for having been edited). The workflow's steps are then run as the runner runs them, in
the clone, as an ordinary user (`attnkit-student`, made here; the test runs as root):

- `actions/checkout`: replaced by what it does, the clone above;
- `actions/setup-python`: replaced by this Python (a venv of /usr/bin/python3, of the same
  version, that sees this interpreter's packages through hard-linked copies);
- each `run:` step: run for real with `bash --noprofile --norc -eo pipefail`, as the runner
  does, `pip` told to use what is installed (no index: every dependency is here already; the
  build backend is this Python's);
- each `autograding-command-grader` step: its `command` run with `sh -c`, with the timeout it
  is given (minutes) and the only environment that action passes (PATH, HOME, FORCE_COLOR and
  two .NET settings); the part passes when the command exits 0, and its points are `max-score`
  read as the action reads it (parseInt);
- the expression `${{ runner.temp }}` in a step: the runner's temporary folder, as the runner
  fills it in before the step runs (the only expression the steps hold, besides the
  reporter's);
- the reporter: each runner's result read from the variable its `env:` names, and summed as it
  sums them (a result with no max-score counts for nothing).

The total must be the score `grader batch` gives the same student for the same parts. One
student (each costs pip and one graded `grader check`, its results read by each part's test);
marked slow.
"""

import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from grader import sandbox
from grader.instructor.outputs.actions import COMMAND_GRADER, REPORTER
from grader.kit import KIT
from grader.records import EXERCISES
from tests.support.honest_imports import HEADER as HONEST_HEADER
from tests.support.released import student_kit_copy
from tests.support.unprivileged import (
    SKIP_REASON,
    SYSTEM_PYTHON,
    ensure_user,
    link_packages,
    run_command,
    running_site_packages,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.ex8_2,
    pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or ""),
    pytest.mark.skipif(not sandbox.status()["complete"], reason="needs Landlock and seccomp"),
]

CLASS = KIT / "examples" / "submissions"
# Partly wrong, so that the scores say which parts passed: bob in the .py file. (A notebook in
# the kit's folder is graded the same way by `grader check`: tests/grader/test_cli.py.) His file
# starts with the honest imports of tests/support/honest_imports.py (SciPy, matplotlib, ...):
# they must cost him nothing here either (issue 45; what is flagged on this path:
# tests/grader/test_honest_imports.py).
STUDENTS = {"bob": "ex8_2.py"}


def handed_in(name: str) -> str:
    return HONEST_HEADER + (CLASS / name / STUDENTS[name]).read_text(encoding="utf-8")


# What the `run:` steps see besides the runner's PATH and HOME: pip finds everything installed.
# How the reporter's `env:` names a step's result.
STEP_RESULT = re.compile(r"\$\{\{\s*steps\.([\w-]+)\.outputs\.result\s*\}\}")
PIP_OFFLINE = {"PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0", "PIP_NO_INPUT": "1"}


def parse_int(text) -> int:
    """JavaScript's parseInt, as the command grader reads max-score: the leading digits."""
    found = re.match(r"\s*([+-]?\d+)", str(text))
    return int(found.group(1)) if found else 0


@pytest.fixture(scope="module")
def runner_base():
    """A folder under /tmp (pytest's own is 0700) that the user can enter, with the running
    interpreter's packages in it, hard-linked, without this checkout's editable install."""
    uid, gid = ensure_user()
    base = Path(tempfile.mkdtemp(prefix="attnkit-actions-", dir="/tmp"))
    base.chmod(0o755)
    packages = []
    for index, source in enumerate(running_site_packages()):
        packages.append(base / f"site-packages-{index}")
        link_packages(source, packages[-1])
    yield base, uid, gid, packages
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def template(runner_base) -> Path:
    """The template repository: a student kit with the workflow in .github/workflows/."""
    base = runner_base[0]
    folder = student_kit_copy(base / "template")
    workflow = folder / ".github" / "workflows" / "classroom.yml"
    written = subprocess.run(
        [sys.executable, "-m", "grader.cli", "release", "actions", "-e", "8-2"]
        + ["--out", str(workflow)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert written.returncode == 0, written.stdout + written.stderr
    return folder


@pytest.fixture(scope="module")
def batch_scores(tmp_path_factory) -> dict[str, float]:
    submissions = tmp_path_factory.mktemp("class")
    for name in STUDENTS:
        (submissions / name).mkdir()
        (submissions / name / STUDENTS[name]).write_text(handed_in(name), encoding="utf-8")
    out = tmp_path_factory.mktemp("batch")
    done = subprocess.run(
        [sys.executable, "-m", "grader.cli", "batch", str(submissions), "-e", "8-2"]
        + ["--out", str(out), "--jobs", "2", "--no-similarity", "--no-pictures"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        return {row["student"]: float(row["8-2"]) for row in csv.DictReader(handle)}


def student_repository(base: Path, template: Path, name: str, uid: int, gid: int) -> Path:
    """The template with the student's file committed, cloned as actions/checkout clones it,
    and given to the user."""
    source = base / f"{name}-origin"
    shutil.copytree(template, source)
    (source / "exercises" / STUDENTS[name]).write_text(handed_in(name), encoding="utf-8")
    git = ["git", "-c", "user.name=student", "-c", "user.email=student@example.org"]
    for words in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "my work"]):
        subprocess.run([*git, *words], cwd=source, check=True, capture_output=True)
    workspace = base / f"{name}-workspace"
    subprocess.run(
        ["git", "clone", "-q", str(source), str(workspace)], check=True, capture_output=True
    )
    for folder, dirs, files in os.walk(workspace):
        for entry in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.chown(entry, uid, gid, follow_symlinks=False)
    return workspace


def python_for(base: Path, name: str, packages: list[Path], uid: int, gid: int) -> Path:
    """What setup-python leaves: a Python of this version on PATH, the user's to install into."""
    venv = base / f"{name}-python"
    subprocess.run(
        [str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(venv)],
        check=True,
        capture_output=True,
    )
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    own = venv / "lib" / version / "site-packages"
    (own / "runner-packages.pth").write_text(
        "".join(f"import site; site.addsitedir({str(p)!r})\n" for p in packages)
    )
    for folder, dirs, files in os.walk(venv):
        for entry in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.chown(entry, uid, gid, follow_symlinks=False)
    return venv / "bin"


def run_workflow(workflow: dict, workspace: Path, bin_folder: Path, home: Path, uid, gid):
    """The job's steps in order; returns (total, maximum, per-step results, logs)."""
    job = workflow["jobs"]["run-autograding-tests"]
    path = f"{bin_folder}:/usr/local/bin:/usr/bin:/bin"
    runner_env = {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8", **PIP_OFFLINE}
    # The command grader's environment, exactly (its src/main.js).
    grader_env = {
        "PATH": path,
        "FORCE_COLOR": "true",
        "DOTNET_CLI_HOME": "/tmp",
        "DOTNET_NOLOGO": "true",
        "HOME": str(home),
    }
    temporary = home.parent / f"{home.name}-runner-temp"
    temporary.mkdir()
    os.chown(temporary, uid, gid)

    def filled(text: str) -> str:
        done = text.replace("${{ runner.temp }}", str(temporary))
        assert "${{" not in done, f"an expression this test does not fill in: {text}"
        return done

    results, logs, reported = {}, {}, None
    for step in job["steps"]:
        uses = step.get("uses", "")
        if uses.startswith(("actions/checkout@", "actions/setup-python@")):
            continue  # done before: the clone, and this Python
        if "run" in step:
            done = run_command(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", filled(step["run"])],
                workspace,
                runner_env,
                timeout=900,
                user=uid,
                group=gid,
            )
            assert done.returncode == 0, (step["name"], done.stdout[-2000:], done.stderr[-3000:])
            continue
        if uses == COMMAND_GRADER:
            given = step["with"]
            maximum = parse_int(given["max-score"])
            try:
                done = run_command(
                    ["sh", "-c", filled(given["command"])],
                    workspace,
                    grader_env,
                    timeout=float(given["timeout"]) * 60,
                    user=uid,
                    group=gid,
                )
                status = "pass" if done.returncode == 0 else "fail"
                logs[step["id"]] = done.stdout + done.stderr
            except subprocess.TimeoutExpired:
                status, logs[step["id"]] = "error", "Command timed out"
            score = maximum if status == "pass" else 0
            results[step["id"]] = {
                "status": status,
                "max_score": maximum,
                "tests": [{"name": given["test-name"], "score": score}],
            }
            continue
        if uses == REPORTER:
            reported = []
            for runner in step["with"]["runners"].split(","):
                expression = step["env"][f"{runner.strip().upper()}_RESULTS"]
                named = re.fullmatch(
                    r"\$\{\{\s*steps\.([\w-]+)\.outputs\.result\s*\}\}", expression
                )
                assert named, expression
                reported.append(results[named.group(1)])
            continue
        raise AssertionError(f"a step this test does not know how to run: {step}")
    assert reported is not None, "no reporter step"
    counted = [r for r in reported if r["max_score"]]
    total = sum(t["score"] for r in counted for t in r["tests"])
    maximum = sum(r["max_score"] for r in counted)
    return total, maximum, results, logs


@pytest.mark.parametrize("name", sorted(STUDENTS))
def test_the_workflow_gives_the_score_grader_batch_gives(name, template, runner_base, batch_scores):
    base, uid, gid, packages = runner_base
    record = EXERCISES["8-2"]
    # Partly right: equal totals say that the same parts passed.
    assert 0 < batch_scores[name] < record.max_score, batch_scores
    workflow = yaml.safe_load(
        (template / ".github" / "workflows" / "classroom.yml").read_text(encoding="utf-8")
    )
    workspace = student_repository(base, template, name, uid, gid)
    bin_folder = python_for(base, name, packages, uid, gid)
    home = base / f"{name}-home"
    home.mkdir()
    os.chown(home, uid, gid)
    total, maximum, results, logs = run_workflow(workflow, workspace, bin_folder, home, uid, gid)
    everything = "\n".join(f"--- {k}\n{v[-1500:]}" for k, v in logs.items())
    assert maximum == record.max_score, results
    assert total == batch_scores[name], (total, batch_scores[name], everything)
    assert {r["status"] for r in results.values()} == {"pass", "fail"}, everything
