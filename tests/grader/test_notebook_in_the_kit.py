"""A student in a fresh copy of the kit fills in `exercises/lab_kv_cache.ipynb` (the page the docs
send notebook students to) and grades from `exercises/`, where Jupyter runs, beside the untouched
`lab_kv_cache.py` (issue 49): `grader check`, `grader watch` and the notebook's `check()` in a
real Jupyter kernel grade the notebook, 10/10, never the stub ("not implemented yet").

The kit is a copy of this one (grader/, attnkit/, exercises/, solutions/) in a temporary folder,
run with its own grader, so that the folder graded from is the kit's own exercises/ (the grader
compares the two forms with the stubs beside them) and nothing is written into the working tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.kit import KIT
from grader.notebook.generate import notebook_text
from grader.records import get_exercise

pytestmark = pytest.mark.labs

RECORD = get_exercise("kv-cache")
NOTEBOOK = "lab_kv_cache.ipynb"


@pytest.fixture(scope="module")
def kit(tmp_path_factory) -> Path:
    """A fresh copy of the kit whose English notebook of kv-cache the student filled in."""
    kit = tmp_path_factory.mktemp("kit")
    for name in ("grader", "attnkit", "exercises", "solutions"):  # solutions: the reference
        shutil.copytree(KIT / name, kit / name, ignore=shutil.ignore_patterns("__pycache__"))
    solution = (KIT / "solutions" / RECORD.file).read_text(encoding="utf-8")
    (kit / "exercises" / NOTEBOOK).write_text(notebook_text(RECORD, solution), encoding="utf-8")
    stub = (kit / "exercises" / RECORD.file).read_text(encoding="utf-8")
    assert "NotImplementedError" in stub  # the .py file beside it is the untouched stub
    return kit


def _environment(kit: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(kit), "PYTHONUNBUFFERED": "1"}


def test_check_from_the_kits_exercises_grades_the_filled_notebook(kit):
    done = subprocess.run(
        [sys.executable, "-m", "grader", "--lang", "en", "check", "kv-cache"],
        cwd=kit / "exercises",
        env=_environment(kit),
        capture_output=True,
        text=True,
        timeout=300,
    )
    text = done.stdout + done.stderr
    assert f"graded file: {kit / 'exercises' / NOTEBOOK}" in text, text
    assert "Score: 10/10" in text and "not implemented" not in text, text
    assert done.returncode == 0, text


def test_watch_from_the_kits_exercises_grades_the_filled_notebook(kit):
    watch = subprocess.Popen(
        [sys.executable, "-m", "grader", "--lang", "en", "watch", "kv-cache"],
        cwd=kit / "exercises",
        env=_environment(kit),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
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
    assert NOTEBOOK in text and "Score: 10/10" in text, text


def test_check_in_a_real_jupyter_kernel_in_the_kits_exercises_grades_the_notebook(kit):
    jupyter_client = pytest.importorskip("jupyter_client")
    pytest.importorskip("ipykernel")
    manager = jupyter_client.KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(kit / "exercises"), env=_environment(kit))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        code = "from grader import check\ngraded = check('kv-cache', lang='en')\n"
        code += "print('GRADED', graded.path, graded.score)"
        printed = []

        def keep(message):
            if message["msg_type"] == "stream":
                printed.append(message["content"]["text"])

        reply = client.execute_interactive(code, timeout=300, output_hook=keep)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert f"GRADED {kit / 'exercises' / NOTEBOOK} 10.0" in "".join(printed), printed
