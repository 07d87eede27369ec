"""A submission made of links and special files: the Gradescope autograder, the batch and
`grader check` read none of them, write nothing outside their own folders, and say which file
it was and what to hand in; the honest files beside them still grade.

Real symbolic links, hard links, FIFOs and folders; `grade` is replaced (as in
test_gradescope.py) by a result made here, which also reads the file it was given, so that no
submitted code runs and what would have been graded is seen."""

import json
import os
import signal
import stat
from pathlib import Path

import pytest

from grader import sandbox
from grader.engine import safe_files
from grader.engine.results import ExerciseResult, PartResult
from grader.grading import unloadable
from grader.instructor import gradescope
from grader.instructor.course.submissions import Student, find_exercise_file, fingerprint, unpack
from grader.records import EXERCISES
from grader.vocabulary.status import Status
from tests.support.gradescope_schema import validate

pytestmark = pytest.mark.ex8_2

HONEST = "def f():\n    return 'mine'\n"
VICTIM = "print('the victim file, unchanged')\n"
NOTEBOOK = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {},
    "cells": [{"cell_type": "code", "metadata": {}, "source": HONEST, "outputs": []}],
}


@pytest.fixture
def deadline():
    """Fail, instead of hanging, if the test takes more than 60 seconds (a FIFO opened)."""

    def late(*_):
        raise TimeoutError("the grader hung (a FIFO opened for reading?)")

    previous = signal.signal(signal.SIGALRM, late)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


class Outside:
    """A folder outside the submission: a victim file whose bytes and mtime must not change,
    and nothing new may appear in it."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir()
        self.victim = folder / "victim.py"
        self.victim.write_text(VICTIM)
        os.utime(self.victim, (1_000_000, 1_000_000))
        (folder / "victim.ipynb").write_text(json.dumps(NOTEBOOK))
        (folder / "victim16.py").write_bytes(HONEST.encode("utf-16"))
        self.before = self.snapshot()

    def snapshot(self) -> dict:
        return {
            p.name: (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(self.folder.iterdir())
            if p.is_file()
        }

    def assert_untouched(self):
        assert self.snapshot() == self.before


def layout_link(sub, out):
    (sub / "ex8_2.py").symlink_to(out.victim)


def layout_dangling_link_beside_a_near_name(sub, out):
    # What the near-name fix used to copy through, as root: any file could be made.
    (sub / "ex8_2.py").symlink_to(out.folder / "new.pth")
    (sub / "Ex8_2.py").write_text(HONEST)


def layout_near_name_link(sub, out):
    (sub / "Ex8_2.py").symlink_to(out.victim)


def layout_hard_link(sub, out):
    out.victim.chmod(0o600)  # a file of the machine's that not every user may read
    os.link(out.victim, sub / "ex8_2.py")


def layout_fifo(sub, out):
    os.mkfifo(sub / "ex8_2.py")


def layout_folder(sub, out):
    (sub / "ex8_2.py").mkdir()
    (sub / "ex8_2.py" / "x.py").write_text(HONEST)


def layout_notebook_link(sub, out):
    (sub / "ex8_2.ipynb").symlink_to(out.folder / "victim.ipynb")


def layout_utf16_link(sub, out):
    # Re-encoding used to rewrite the file in place: through the link, the victim's bytes.
    (sub / "ex8_2.py").symlink_to(out.folder / "victim16.py")


def layout_dangling_link(sub, out):
    (sub / "ex8_2.py").symlink_to(out.folder / "sitecustomize.py")


def layout_planted_output_beside_a_notebook(sub, out):
    # The notebook's code is written as ex8_2.py beside it: there, a link waits.
    (sub / "ex8_2.ipynb").write_text(json.dumps(NOTEBOOK))
    (sub / "ex8_2.py").symlink_to(out.folder / "planted.py")


def layout_linked_folder(sub, out):
    (out.folder / "ex8_2.py").write_text(VICTIM)
    out.before = out.snapshot()
    (sub / "week8").symlink_to(out.folder, target_is_directory=True)


LAYOUTS = {
    layout_link: "ex8_2.py is a symbolic link: hand in the file itself",
    layout_dangling_link_beside_a_near_name: "ex8_2.py is a symbolic link",
    layout_near_name_link: "Ex8_2.py is a symbolic link",
    layout_hard_link: "ex8_2.py is a hard link (one file with 2 names) to a file not every",
    layout_fifo: "ex8_2.py is a named pipe (FIFO), not a file",
    layout_folder: "ex8_2.py is a folder: hand in the file itself",
    layout_notebook_link: "ex8_2.ipynb is a symbolic link",
    layout_utf16_link: "ex8_2.py is a symbolic link",
    layout_dangling_link: "ex8_2.py is a symbolic link",
    layout_planted_output_beside_a_notebook: "ex8_2.py is a symbolic link",
    layout_linked_folder: "no ex8_2.py (or ex8_2.ipynb) in the submission",
}


def hostile(tmp_path, layout):
    """A submission of `layout` beside an honest ex8_1.py, and the folder outside it."""
    out = Outside(tmp_path / "outside")
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "ex8_1.py").write_text(HONEST)
    layout(sub, out)
    return sub, out


def listing(folder: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(folder)), p.lstat().st_mode) for p in folder.rglob("*"))


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda f: f.__name__.removeprefix("layout_"))
def test_gradescope_writes_nothing_outside_and_says_which_file(
    layout, tmp_path, monkeypatch, deadline
):
    sub, out = hostile(tmp_path, layout)
    before = listing(sub)
    state = {**sandbox.status(), "complete": True}
    monkeypatch.setattr(sandbox, "status", lambda: state)
    graded, where = {}, []

    def fake_grade(exercise_id, path, **kwargs):
        # What would run: the file given, as it is (no link, nowhere in the submission).
        where.append(Path(path))
        graded[exercise_id] = Path(path).read_text("utf-8") if Path(path).is_file() else None
        parts = [
            PartResult(p.name, p.points, Status.PASSED, []) for p in EXERCISES[exercise_id].parts
        ]
        return ExerciseResult(exercise_id, parts, submission=str(path))

    monkeypatch.setattr(gradescope, "grade", fake_grade)
    results = validate(gradescope.results_for(sub, ["8-1", "8-2"], 1, tmp_path / "root"))

    out.assert_untouched()
    assert listing(sub) == before  # nothing written into the submission either
    assert graded == {"8-1": HONEST}  # the honest file graded, nothing of the links read
    assert not any(p.is_symlink() or p.is_relative_to(sub) for p in where)
    rows = [t for t in results["tests"] if t["name"].startswith("8-2 ")]
    assert rows and all(t["score"] == 0.0 and t["status"] == "failed" for t in rows)
    assert all(LAYOUTS[layout] in t["output"] for t in rows), rows[0]["output"]
    assert results["score"] == EXERCISES["8-1"].max_score


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda f: f.__name__.removeprefix("layout_"))
def test_the_batch_copy_leaves_links_out_and_names_them(layout, tmp_path, deadline):
    sub, out = hostile(tmp_path, layout)
    student = Student("alice", sub)
    fingerprint(student)  # reads, never hangs on the FIFO
    copy = tmp_path / "scratch"
    refused = unpack(student, copy)
    found = find_exercise_file(copy, "ex8_2.py", refused)
    honest = find_exercise_file(copy, "ex8_1.py", refused)
    out.assert_untouched()
    assert found.path is None and LAYOUTS[layout] in found.problem
    assert honest.path.read_text("utf-8") == HONEST
    for path in copy.rglob("*"):  # the copy holds plain files and folders only
        mode = path.lstat().st_mode
        assert stat.S_ISDIR(mode) or (stat.S_ISREG(mode) and path.lstat().st_nlink == 1)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda f: f.__name__.removeprefix("layout_"))
def test_finding_the_file_in_place_never_writes_through_a_link(layout, tmp_path, deadline):
    """find_exercise_file given the submission itself (not a copy): it still refuses."""
    sub, out = hostile(tmp_path, layout)
    found = find_exercise_file(sub, "ex8_2.py")
    out.assert_untouched()
    assert found.path is None and LAYOUTS[layout] in found.problem


def test_grader_check_says_the_file_is_a_link_or_a_fifo(tmp_path, deadline):
    out = Outside(tmp_path / "outside")
    (tmp_path / "ex8_2.py").symlink_to(out.victim)
    assert "ex8_2.py is a symbolic link" in unloadable(tmp_path / "ex8_2.py")
    (tmp_path / "ex8_2.py").unlink()
    os.mkfifo(tmp_path / "ex8_2.py")
    assert "named pipe" in unloadable(tmp_path / "ex8_2.py")
    (tmp_path / "ex8_2.py").unlink()
    (tmp_path / "ex8_2.py").write_text(HONEST)
    assert unloadable(tmp_path / "ex8_2.py") == ""


def test_a_new_file_is_never_written_through_a_link_already_there(tmp_path):
    out = Outside(tmp_path / "outside")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "ex8_2.py").symlink_to(out.victim)
    (mine / "new.py").symlink_to(out.folder / "new.py")
    for name in ("ex8_2.py", "new.py"):
        with pytest.raises(FileExistsError):
            safe_files.write_new(mine, name, b"x = 1\n")
    out.assert_untouched()
    safe_files.replace_with(mine / "ex8_2.py", b"x = 2\n")  # replaces the link, not the victim
    out.assert_untouched()
    assert not (mine / "ex8_2.py").is_symlink() and (mine / "ex8_2.py").read_bytes() == b"x = 2\n"


def test_a_file_over_the_bound_is_refused_unread(tmp_path):
    (tmp_path / "big.py").write_bytes(b"#" * 2048)
    with pytest.raises(safe_files.RefusedFile, match="larger than"):
        safe_files.read_plain_path(tmp_path / "big.py", limit=1024)
    assert safe_files.read_plain_path(tmp_path / "big.py", limit=4096) == b"#" * 2048


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping privileges needs root")
def test_as_root_the_gradescope_files_are_read_without_root(tmp_path, monkeypatch):
    """A file only root may read cannot be copied: the helper was not root when it tried."""
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "ex8_1.py").write_text(HONEST)
    (sub / "ex8_2.py").write_text(HONEST)
    (sub / "ex8_2.py").chmod(0o600)
    scratch = safe_files.private_folder()
    try:
        files = gradescope.prepare_files(sub, ["ex8_1.py", "ex8_2.py"], scratch)
        assert "Permission denied" in files["ex8_2.py"].problem
        assert files["ex8_1.py"].path.read_text("utf-8") == HONEST
        for path in [scratch, *scratch.rglob("*")]:  # root's again, for the grading
            assert path.lstat().st_uid == 0
        assert stat.S_IMODE(scratch.stat().st_mode) == 0o700
    finally:
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)


def test_a_notebook_checked_from_jupyter_is_not_read_through_a_link(tmp_path, deadline):
    from grader.notebook.live import grade_path

    out = Outside(tmp_path / "outside")
    (tmp_path / "ex8_2.ipynb").symlink_to(out.folder / "victim.ipynb")
    graded = grade_path(EXERCISES["8-2"], tmp_path / "ex8_2.ipynb", pictures=False)
    out.assert_untouched()
    assert graded.result.score == 0
    assert all("ex8_2.ipynb is a symbolic link" in p.summary for p in graded.result.parts)


def test_a_classmates_hard_link_to_an_honest_file_costs_its_owner_nothing(tmp_path):
    """Linking an honest student's readable file into one's own folder must not make the honest
    student's file refused (the two are then merely alike); a link to a private file is."""
    honest = tmp_path / "honest" / "ex8_2.py"
    honest.parent.mkdir()
    honest.write_text(HONEST)
    honest.chmod(0o644)
    (tmp_path / "linker").mkdir()
    os.link(honest, tmp_path / "linker" / "ex8_2.py")
    for folder in ("honest", "linker"):
        assert safe_files.read_under(tmp_path / folder, "ex8_2.py") == HONEST.encode()
    honest.chmod(0o600)
    with pytest.raises(safe_files.RefusedFile, match="hard link"):
        safe_files.read_under(tmp_path / "linker", "ex8_2.py")


def test_a_student_folder_that_is_a_link_is_graded_zero_with_the_reason(tmp_path):
    from grader.instructor.course.submissions import UnsafeSubmission, discover, unpack

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "ex8_2.py").write_text(HONEST)
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "linker").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (students,) = discover(tmp_path / "class")
    assert students.id == "linker"
    with pytest.raises(UnsafeSubmission, match="linker is a symbolic link"):
        unpack(students, tmp_path / "copy")
    assert not (tmp_path / "copy" / "ex8_2.py").exists()


def test_one_file_in_two_students_folders_flags_both_for_the_instructor(tmp_path):
    from grader.instructor.course.submissions import discover, sharing_a_file
    from grader.instructor.outputs.outcomes import SHARED_FILE, integrity_flags

    for name in ("honest", "linker", "copier"):
        (tmp_path / name).mkdir()
    (tmp_path / "honest" / "ex8_2.py").write_text(HONEST)
    os.link(tmp_path / "honest" / "ex8_2.py", tmp_path / "linker" / "ex8_2.py")
    (tmp_path / "copier" / "ex8_2.py").write_text(HONEST)  # alike, for the similarity report
    assert sharing_a_file(discover(tmp_path)) == {"honest", "linker"}
    assert integrity_flags({"flags": [SHARED_FILE]}, "8-2") == [SHARED_FILE]
