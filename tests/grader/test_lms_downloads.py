"""`grader batch` on an LMS's "download all submissions" as it comes (Canvas's loose files,
Moodle's folders), on an unknown layout (an error that says what it expected), and on a long
run: a count with the time left in a log, and Ctrl-C saying what is saved and how to go on."""

import csv
import io
import shlex
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader import cli
from grader.instructor.course.submissions import discover, unpack
from tests.grader.test_batch import GOOD, slow_class
from tests.support.grading import ctrl_c_reaches_it, replace_function

pytestmark = pytest.mark.ex8_2

# Swaps the sign of bilinear_asymmetry: that part (1 point of 10) fails, the rest pass.
WRONG = replace_function(GOOD, "bilinear_asymmetry", "    return W.T - W")


def grader(*words: str) -> list[str]:
    return [sys.executable, "-m", "grader.cli", *words]


def batch(folder: Path, out: Path):
    """`grader batch` of the download, in this process (its children come from this test
    process's grading helper, already started: no TensorFlow start of its own); the last test
    below runs the command itself. The result has `returncode`, `stdout` and `stderr`."""
    words = ["batch", str(folder), "-e", "8-2", "--out", str(out), "--jobs", "2"]
    words += ["--seed", "5", "--no-pictures", "--no-similarity"]
    result = CliRunner().invoke(cli.main, words)
    result.returncode = result.exit_code
    return result


def totals(out: Path) -> dict[str, str]:
    rows = csv.DictReader(io.StringIO((out / "grades.csv").read_text(encoding="utf-8")))
    return {row["student"]: row["total"] for row in rows}


def zipped(path: Path, members: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)


def test_a_canvas_download_grades_each_student_on_their_newest_file(tmp_path):
    """Canvas: <login>[_late]_<user id>_<submission id>_<file>, `-N` on a re-uploaded name."""
    download = tmp_path / "canvas"
    download.mkdir()
    (download / "leeann_1009_88001_ex8_2.py").write_text(WRONG)  # first try
    (download / "leeann_1009_88002_ex8_2-1.py").write_text(GOOD)  # re-uploaded: graded
    (download / "wongbo_late_1010_88003_ex8_2.py").write_text(WRONG)
    zipped(download / "chénxī_1011_88004_week 8.zip", {"week 8/ex8_2.py": GOOD})
    (download / "leeann_1009_88001_notes.txt").write_text("a stray file of the same student")
    done = batch(download, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "3 students" in done.stdout
    assert totals(tmp_path / "out") == {"chénxī": "10", "leeann": "10", "wongbo": "9"}


def test_a_moodle_download_grades_each_folder_under_the_students_name(tmp_path):
    """Moodle: a folder `Full Name_<id>_assignsubmission_<plugin>_` per student and plugin."""
    download = tmp_path / "moodle"
    ann = download / "Ann Lee_101_assignsubmission_file_"
    ann.mkdir(parents=True)
    (ann / "ex8_2.py").write_text(GOOD)
    text = download / "Ann Lee_101_assignsubmission_onlinetext_"
    text.mkdir()
    (text / "onlinetext.html").write_text("<p>see the file</p>")
    zoe = download / "Zoë Müller_102_assignsubmission_file_"
    zoe.mkdir()
    zipped(zoe / "Abgabe.zip", {"Abgabe/ex8_2.py": WRONG})
    li = download / "李雷_103_assignsubmission_file_"
    li.mkdir()
    (li / "ex8_2.py").write_text(GOOD)
    done = batch(download, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert totals(tmp_path / "out") == {"Ann Lee": "10", "Zoë Müller": "9", "李雷": "10"}


def test_a_shared_name_keeps_each_student_apart_by_lms_id(tmp_path):
    for user in ("7", "8"):
        folder = tmp_path / f"Sam Park_{user}_assignsubmission_file_"
        folder.mkdir()
        (folder / "ex8_2.py").write_text(GOOD)
    (tmp_path / "Sam Park").mkdir()  # a plain folder of the same name stays itself
    (tmp_path / "Sam Park" / "ex8_2.py").write_text(GOOD)
    assert [s.id for s in discover(tmp_path)] == ["Sam Park", "Sam Park_7", "Sam Park_8"]


def test_a_file_named_with_a_dash_keeps_its_name(tmp_path):
    """Only a `-N` that hides an exercise's name (or another file's) is Canvas's re-upload."""
    (tmp_path / "kim_12_34_ex8-2.py").write_text(GOOD)
    (tmp_path / "kim_12_35_plot-2.png").write_bytes(b"png")
    (student,) = discover(tmp_path)
    assert sorted(name for name, _ in student.files) == ["ex8-2.py", "plot-2.png"]


def test_moodle_loose_files_and_canvas_repeats_are_grouped_and_the_newest_kept(tmp_path):
    """Moodle without "download submissions in folders": its prefix on each file. Canvas: the
    same name twice (two submissions), the higher submission id is the newer."""
    (tmp_path / "Ann Lee_101_assignsubmission_file_ex8_2.py").write_text(GOOD)
    (tmp_path / "Ann Lee_101_assignsubmission_file_notes.md").write_text("notes")
    (tmp_path / "bo_5_900_ex8_2.py").write_text("old")
    (tmp_path / "bo_5_901_ex8_2.py").write_text("new")
    ann, bo = discover(tmp_path)
    assert (ann.id, [name for name, _ in ann.files]) == ("Ann Lee", ["ex8_2.py", "notes.md"])
    assert (bo.id, [(name, path.name) for name, path in bo.files]) == (
        "bo",
        [("ex8_2.py", "bo_5_901_ex8_2.py")],
    )
    scratch = tmp_path / "scratch"
    unpack(bo, scratch)
    assert (scratch / "ex8_2.py").read_text() == "new"


@pytest.mark.parametrize("content", ["nothing", "loose files of no known layout"])
def test_a_folder_without_students_is_an_error_that_names_the_layouts(tmp_path, content):
    folder = tmp_path / "download"
    folder.mkdir()
    if content != "nothing":
        (folder / "ex8_2.py").write_text(GOOD)
        (folder / "grades.csv").write_text("a,b\n")
    done = batch(folder, tmp_path / "out")
    assert done.returncode == 1
    assert "no student found" in done.stderr
    for layout in ("one folder or .zip per student", "Canvas", "Moodle"):
        assert layout in done.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_a_log_gets_a_count_and_the_time_left_and_ctrl_c_says_how_to_go_on(tmp_path):
    root = slow_class(tmp_path, 0.1, size=4)  # four alike students, each a little slow
    # (the slow part sleeps 0.1 s a call, called for each of its cases, shown and hidden: SIGINT,
    # sent 0.4 s at most after the second result, lands while the third is graded)
    out = tmp_path / "out with space"
    command = grader("batch", str(root), "-e", "8-2", "--out", str(out), "-j", "1")
    command += ["--no-pictures", "--no-similarity"]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        preexec_fn=ctrl_c_reaches_it,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(list((out / "results").glob("*.json"))) < 2:
        time.sleep(0.1)
    # The grader counts a student just after writing their file: a moment for the count to
    # follow the file (the third student takes 1.4 s at least).
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    saved = len(list((out / "results").glob("*.json")))
    assert process.returncode == 130, stderr
    assert 2 <= saved < 4
    lines = [line for line in stderr.splitlines() if line.startswith("  [")]
    assert lines[0].startswith("  [1/4] s") and "left" in lines[0], stderr
    assert "Aborted!" not in stderr
    assert f"Interrupted: {saved} of 4 students' results are saved" in stderr, stderr
    resume = stderr.strip().splitlines()[-1].strip()
    assert resume.startswith("grader batch ") and "--seed" in resume, resume
    assert f"'{out}'" in resume  # quoted: the path has a space
    # The command printed, run as printed (after `grader`), grades only the rest.
    again = subprocess.run(
        grader(*shlex.split(resume)[1:]),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert again.returncode == 0, again.stderr
    assert f"{saved} of 4 already graded" in again.stderr
    assert f"4 students: {4 - saved} graded, {saved} already graded" in again.stdout
    assert len(totals(out)) == 4 and len(set(totals(out).values())) == 1  # alike, graded alike


def test_a_moodle_student_whose_name_starts_with_a_dot_is_not_left_out(tmp_path):
    """Moodle names a folder after the student's full name as it is: "..", ".Ann" are
    students, not hidden folders (the third red team's class lost one in silence)."""
    download = tmp_path / "moodle"
    for name, user in (("Ann Li", 301), ("..", 304), (".Bo", 305)):
        folder = download / f"{name}_{user}_assignsubmission_file_"
        folder.mkdir(parents=True)
        (folder / "ex8_2.py").write_text(GOOD)
    (download / ".DS_Store").write_text("")
    ids = sorted(student.id for student in discover(download))
    assert ids == ["..", ".Bo", "Ann Li"]
