"""A stub and a notebook of the same exercise side by side (issue 49): the one the student
edited is graded, never the untouched stub beside it, by `grader check` and `grader watch` run
in that folder (a student in exercises/, where Jupyter runs), by the notebook's `check()` in a
real Jupyter kernel, and by `grader batch` (a student folder holding both)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader import cli
from grader.instructor.course.stubs import package_dir
from grader.notebook.edited import edited_form
from grader.notebook.generate import notebook_text
from grader.records import get_exercise
from tests.support.unprivileged import REPO

pytestmark = pytest.mark.ex8_2

RECORD = get_exercise("8-2")
SOLUTION = (package_dir("solutions") / "ex8_2.py").read_text(encoding="utf-8")
STUB = (package_dir("exercises") / "ex8_2.py").read_text(encoding="utf-8")


def _folder(tmp_path, python=STUB, notebook=STUB) -> Path:
    """A student's exercises/ as the kit ships it, with the two forms of 8-2 as given."""
    folder = tmp_path / "exercises"
    folder.mkdir(parents=True)
    (folder / "ex8_2.py").write_text(python, encoding="utf-8")
    (folder / "ex8_2.ipynb").write_text(notebook_text(RECORD, notebook), encoding="utf-8")
    return folder


def _check_here(folder, monkeypatch):
    monkeypatch.chdir(folder)
    return CliRunner().invoke(cli.main, ["--lang", "en", "check", "8-2"])


def test_the_edited_form_is_chosen_and_both_edited_the_newer_with_the_other_named(tmp_path):
    folder = _folder(tmp_path, notebook=SOLUTION)
    python, notebook = folder / "ex8_2.py", folder / "ex8_2.ipynb"
    assert edited_form(python, notebook, RECORD.file).path == notebook
    python.write_text(SOLUTION, encoding="utf-8")
    notebook.write_text(notebook_text(RECORD, STUB), encoding="utf-8")
    assert edited_form(python, notebook, RECORD.file).path == python
    notebook.write_text(notebook_text(RECORD, SOLUTION), encoding="utf-8")
    assert edited_form(python, notebook, RECORD.file).other_edited is None  # alike: one code
    notebook.write_text(notebook_text(RECORD, SOLUTION + "\nx = 1\n"), encoding="utf-8")
    os.utime(python, (1, 1))
    both = edited_form(python, notebook, RECORD.file)
    assert (both.path, both.other_edited) == (notebook, python)
    untouched = _folder(tmp_path / "again")
    chosen = edited_form(untouched / "ex8_2.py", untouched / "ex8_2.ipynb", RECORD.file)
    assert chosen.untouched and chosen.path.suffix == ".py"


def test_check_in_the_folder_grades_the_notebook_the_student_filled(tmp_path, monkeypatch):
    result = _check_here(_folder(tmp_path, notebook=SOLUTION), monkeypatch)
    assert "ex8_2.ipynb" in result.output and "Score: 10/10" in result.output, result.output
    assert result.exit_code == 0


def test_check_says_which_was_graded_when_both_were_edited(tmp_path, monkeypatch):
    folder = _folder(
        tmp_path,
        python=SOLUTION.replace("return W - ops.transpose(W)", "return ops.transpose(W) - W"),
    )
    (folder / "ex8_2.ipynb").write_text(notebook_text(RECORD, SOLUTION), encoding="utf-8")
    os.utime(folder / "ex8_2.py", (1, 1))
    result = _check_here(folder, monkeypatch)
    assert "Score: 10/10" in result.output, result.output
    assert "both edited; ex8_2.ipynb was graded" in result.stderr
    assert f"grader check 8-2 {folder / 'ex8_2.py'}" in result.stderr


def test_watch_in_the_folder_grades_the_notebook(tmp_path):
    folder = _folder(tmp_path, notebook=SOLUTION)
    watch = subprocess.Popen(
        [sys.executable, "-m", "grader", "--lang", "en", "watch", "8-2"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"},
        start_new_session=True,
    )
    lines = []
    try:
        deadline = time.monotonic() + 180
        for line in watch.stdout:
            lines.append(line)
            if line.startswith("Score:") or time.monotonic() > deadline:
                break
    finally:
        os.killpg(watch.pid, 9)
        watch.wait()
    text = "".join(lines)
    assert "ex8_2.ipynb" in text and "Score: 10/10" in text, text


def test_check_in_a_real_jupyter_kernel_grades_the_notebook_beside_the_stub(tmp_path):
    jupyter_client = pytest.importorskip("jupyter_client")
    pytest.importorskip("ipykernel")
    folder = _folder(tmp_path, notebook=SOLUTION)
    manager = jupyter_client.KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(folder), env={**os.environ, "PYTHONPATH": str(REPO)})
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        code = "from grader import check\ngraded = check('8-2', lang='en')\n"
        code += "print('GRADED', graded.path.name, graded.score)"
        printed = []

        def keep(message):
            if message["msg_type"] == "stream":
                printed.append(message["content"]["text"])

        reply = client.execute_interactive(code, timeout=300, output_hook=keep)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert "GRADED ex8_2.ipynb 10.0" in "".join(printed), printed


def test_batch_grades_the_edited_form_of_a_folder_holding_both(tmp_path):
    classroom = tmp_path / "class"
    for student, python, notebook in (
        ("nb_filled", STUB, SOLUTION),
        ("py_filled", SOLUTION, STUB),
        (
            "both",
            SOLUTION.replace("return W - ops.transpose(W)", "return ops.transpose(W) - W"),
            SOLUTION,
        ),
    ):
        folder = classroom / student
        folder.mkdir(parents=True)
        (folder / "ex8_2.py").write_text(python, encoding="utf-8")
        (folder / "ex8_2.ipynb").write_text(notebook_text(RECORD, notebook), encoding="utf-8")
    out = tmp_path / "out"
    words = ["batch", str(classroom), "-e", "8-2", "--out", str(out), "--jobs", "2"]
    result = CliRunner().invoke(cli.main, words + ["--no-pictures", "--no-similarity"])
    assert result.exit_code == 0, result.output
    grades = (out / "grades.csv").read_text(encoding="utf-8").splitlines()
    rows = {line.split(",")[0]: line.split(",") for line in grades[1:]}
    assert rows["nb_filled"][1] == rows["py_filled"][1] == "10", grades
    assert rows["both"][1] == "0" and "unusable-8-2" in rows["both"][-1]
    feedback = (out / "feedback" / "both.md").read_text(encoding="utf-8")
    assert "are edited, and differ" in feedback
