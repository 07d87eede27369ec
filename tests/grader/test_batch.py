"""`grader batch`: every kind of misbehaving submission costs only what it broke; results are
reproducible, resumable, and nothing a submission writes is trusted."""

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from grader.engine.cases import make_cases
from grader.instructor.batch import BatchError, BatchOptions, run_batch
from grader.instructor.course.stubs import package_dir
from grader.records import EXERCISES
from tests.support.grading import (
    command_line,
    descendants,
    replace_function,
    running,
    session_leaders,
)

pytestmark = pytest.mark.ex8_2

SOLUTION = (package_dir("solutions") / "ex8_2.py").read_text()
GOOD = "\n".join(line for line in SOLUTION.splitlines() if "SOLUTION" not in line) + "\n"


def hard_coded_asymmetry() -> str:
    """Answers only the public cases, from a table of their inputs: must fail hidden ones."""
    cases = make_cases(EXERCISES["8-2"], 0)["bilinear_asymmetry"]
    table = {
        c.inputs["W"].tobytes().hex(): (c.inputs["W"] - c.inputs["W"].T).tolist() for c in cases
    }
    return replace_function(
        GOOD,
        "bilinear_asymmetry",
        f"    import numpy as np\n    table = {table!r}\n"
        "    W = np.asarray(W)\n"
        "    return np.array(table.get(W.tobytes().hex(), np.zeros_like(W)))",
    )


def write(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)


def make_zip(path: Path, members: dict[str, bytes], links: dict[str, str] = None) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o120777 << 16
            archive.writestr(info, target)


ASYM = "bilinear_asymmetry"
CLASS = {
    "good": GOOD,
    "crash": replace_function(GOOD, "dot_product_variance", "    import os\n    os._exit(3)"),
    "hang": replace_function(GOOD, ASYM, "    while True:\n        pass"),
    "memory": replace_function(
        GOOD, ASYM, "    import numpy as np\n    return np.ones(2**34) + W.sum()"
    ),
    "sysexit": replace_function(GOOD, "dot_product_variance", "    import sys\n    sys.exit(3)"),
    "forkbomb": replace_function(GOOD, ASYM, "    import os\n    while True:\n        os.fork()"),
    "flood": replace_function(GOOD, ASYM, "    while True:\n        print('x' * 100000)"),
    "threadbomb": replace_function(
        GOOD,
        ASYM,
        "    import threading, time\n"
        "    threading.stack_size(65536)\n"
        "    for _ in range(400):\n"
        "        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "    time.sleep(60)",
    ),
    "diskfiller": replace_function(
        GOOD,
        ASYM,
        "    index = 0\n"
        "    while True:\n"
        "        index += 1\n"
        "        with open(f'filler{index}', 'wb') as handle:\n"
        "            handle.write(b'x' * 4_000_000)",
    ),
    "peeker": replace_function(GOOD, ASYM, "    import attnkit\n    return W - W.T"),
    "reader": replace_function(
        GOOD, ASYM, "    open('../../solutions/ex8_2.py').read()\n    return W - W.T"
    ),
    "hardcoder": hard_coded_asymmetry(),
}


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    for student, source in CLASS.items():
        write(root / student, "ex8_2.py", source)
    write(root / "nested" / "week8" / "code", "ex8_2.py", GOOD)
    write(root / "piped", "ex8_2.py", GOOD)
    os.mkfifo(root / "piped" / "a-fifo")  # copying it would hang the grader
    write(root / "empty", "notes.txt", "I will hand it in tomorrow\n")
    write(root / "twice" / "a", "ex8_2.py", GOOD)
    write(root / "downloaded", "Ex8-2 (1).py", GOOD)  # a near name: graded, flagged
    write(root / "near-twice", "Ex8_2.py", GOOD)
    write(root / "near-twice", "ex8_2 copy.py", GOOD)
    (root / "powershell").mkdir()
    (root / "powershell" / "ex8_2.py").write_bytes(GOOD.encode("utf-16"))  # `>` in PowerShell
    write(root / "twice" / "b", "ex8_2.py", GOOD)
    make_zip(root / "zipped.zip", {"hw/ex8_2.py": GOOD.encode()})
    make_zip(root / "zipslip.zip", {"../../escaped.py": b"x = 1\n", "ex8_2.py": GOOD.encode()})
    make_zip(root / "linked.zip", {"ex8_2.py": GOOD.encode()}, links={"secret": "/etc/passwd"})
    (root / "corrupt.zip").write_bytes(b"PK\x03\x04 this is not really a zip archive")
    return root


@pytest.fixture(scope="module")
def graded(classroom, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    options = BatchOptions(["8-2"], out, jobs=2, timeout=3, seed=11)
    snoop = (
        "    import os\n"
        "    seen = []\n"
        f"    for folder in ({str(out)!r}, {str(package_dir('solutions'))!r}):\n"
        "        try:\n"
        "            seen += os.listdir(folder)\n"
        "        except OSError:\n"
        "            pass\n"
        "    if seen:\n"
        "        raise RuntimeError(f'I can see {seen}')\n"
        "    return W - W.T"
    )
    write(classroom / "snooper", "ex8_2.py", replace_function(GOOD, ASYM, snoop))
    summary = run_batch(classroom, options)
    results = {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}
    return summary, out, results


def part(results, student, name):
    exercise = results[student]["exercises"][0]
    return next(p for p in exercise["parts"] if p["name"] == name)


def messages(results, student, name):
    return " ".join(c["message"] for c in part(results, student, name)["checks"])


def test_every_student_gets_a_row_and_the_batch_never_aborts(graded):
    summary, out, results = graded
    rows = list(csv.DictReader(io.StringIO((out / "grades.csv").read_text())))
    assert [r["student"] for r in rows] == sorted(summary.students)
    assert set(results) == set(summary.students)
    assert rows[0].keys() == {"student", "8-2", "total", "max_total", "flags"}
    score = {r["student"]: float(r["total"]) for r in rows}
    full = ("good", "nested", "zipped", "piped", "downloaded", "powershell")
    why = {s: _first_failures(results[s]) for s in full if score[s] != 10.0}
    assert all(score[s] == 10.0 for s in full), why


def _first_failures(result) -> list[str]:
    """What a student's failed parts say first (for an assertion's message)."""
    found = [result.get("flags")]
    for exercise in result.get("exercises", []):
        for p in exercise["parts"]:
            failed = [c["message"] for c in p["checks"] if not c["passed"]]
            if failed:
                found.append(f"{p['name']}: {failed[0][:300]}")
    return found


@pytest.mark.parametrize(
    "student,name,status,phrase,kept",
    [
        ("crash", "variances", "error", "exited with status 3", 8),
        ("sysexit", "variances", "error", "sys.exit(3)", 8),
        ("hang", ASYM, "timeout", "stopped after 3 s", 9),
        ("memory", ASYM, "error", "ran out of memory: the limit is 2048 MB", 9),
        ("forkbomb", ASYM, "error", "the sandbox does not allow", 9),
        ("threadbomb", ASYM, "error", "threads (at most 256 allowed)", 9),
        ("diskfiller", ASYM, "error", "wrote more than 256 MB", 9),
        ("flood", ASYM, "error", "more than the 4 MB output cap", 9),
        ("peeker", ASYM, "error", "importing 'attnkit' is not allowed", 9),
        ("hardcoder", ASYM, "failed", "every value is zero", 9),
    ],
)
def test_each_failure_costs_only_its_part(graded, student, name, status, phrase, kept):
    _, _, results = graded
    assert part(results, student, name)["status"] == status
    assert part(results, student, name)["score"] == 0.0
    assert phrase in messages(results, student, name)
    # The parts before it (same child) and after it (a fresh child, where it killed the first)
    # are all graded.
    others = [p for p in results[student]["exercises"][0]["parts"] if p["name"] != name]
    assert [p["status"] for p in others] == ["passed"] * 4, others
    assert results[student]["total"] == kept


def test_hard_coded_public_answers_pass_public_checks_only(graded):
    _, _, results = graded
    checks = part(results, "hardcoder", ASYM)["checks"]
    public = [c for c in checks if "hidden" not in c["name"]]
    hidden = [c for c in checks if "hidden" in c["name"]]
    assert public and all(c["passed"] for c in public)
    assert hidden and not all(c["passed"] for c in hidden)
    # Hidden cases say what is wrong, never the expected values.
    assert all("expected" not in c["message"] for c in hidden)


@pytest.mark.parametrize(
    "student,flag",
    [
        ("peeker", "imports-attnkit:8-2"),
        ("reader", "opens-solutions:8-2"),
        ("empty", "missing-8-2"),
        ("twice", "unusable-8-2"),
        ("downloaded", "renamed-8-2"),
        ("near-twice", "unusable-8-2"),
        ("zipslip", "unsafe-submission"),
        ("linked", "unsafe-submission"),
        ("corrupt", "unsafe-submission"),
    ],
)
def test_integrity_and_file_problems_are_flagged(graded, student, flag):
    _, out, results = graded
    assert flag in results[student]["flags"]
    row = next(
        r
        for r in csv.DictReader(io.StringIO((out / "grades.csv").read_text()))
        if r["student"] == student
    )
    assert flag in row["flags"].split(";")


@pytest.mark.parametrize(
    "student,phrase",
    [
        ("empty", "no ex8_2.py (or ex8_2.ipynb) in the submission"),
        ("twice", "several files named ex8_2.py (a/ex8_2.py, b/ex8_2.py)"),
        ("near-twice", "several files of a near name (Ex8_2.py, ex8_2 copy.py)"),
        ("zipslip", "points outside the archive"),
        ("linked", "symbolic link"),
        ("corrupt", "not a readable zip archive"),
    ],
)
def test_unusable_submissions_score_zero_with_the_reason(graded, student, phrase):
    _, _, results = graded
    assert results[student]["total"] == 0.0
    assert phrase in messages(results, student, "ScaledDotScore")


def test_a_file_under_a_near_name_is_graded_and_its_student_told_the_right_name(graded):
    from grader.instructor.outputs.outcomes import Outcome, part_outcomes

    _, out, results = graded
    feedback = (out / "feedback" / "downloaded.md").read_text()
    assert "no file was named ex8_2.py" in feedback and "Name it exactly ex8_2.py" in feedback
    # A file name is not an integrity question: the parts count as passed, not flagged.
    assert set(part_outcomes(results["downloaded"]).values()) == {Outcome.PASSED}
    assert "renamed-8-2" not in results["good"]["flags"]


def test_results_and_solutions_are_out_of_reach_and_the_attempt_is_flagged(graded):
    _, out, results = graded
    # Results of other students existed when the snooper ran (it is graded after most).
    assert part(results, "snooper", ASYM)["status"] == "passed", messages(results, "snooper", ASYM)
    assert "refused-open:8-2" in results["snooper"]["flags"]
    refused = {s: [f for f in r["flags"] if f.startswith("refused-")] for s, r in results.items()}
    assert {s: f for s, f in refused.items() if f} == {
        "snooper": ["refused-open:8-2"],
        "reader": ["refused-open:8-2"],
        "forkbomb": ["refused-process:8-2"],
        "peeker": ["refused-import:8-2"],
    }


def test_zip_slip_writes_nothing_outside(graded, classroom):
    assert not (classroom.parent / "escaped.py").exists()
    assert not list(Path("/tmp").glob("escaped.py"))


def test_outputs_for_people_and_machines(graded):
    summary, out, results = graded
    feedback = (out / "feedback" / "hardcoder.md").read_text()
    assert "# Feedback for hardcoder" in feedback and "hidden, W of shape" in feedback
    assert results["good"]["seed"] == 11 and results["good"]["public_seed"] == 0
    exercise = results["good"]["exercises"][0]
    assert {"exercise", "score", "max_score", "parts", "flags"} <= set(exercise)
    junit = (out / "junit.xml").read_text()
    assert junit.count("<testcase") == 5 * len(summary.students)
    assert 'classname="hang" name="8-2 bilinear_asymmetry"' in junit
    html = (out / "report.html").read_text()
    assert "feedback/hardcoder.md" in html and "<svg" in html
    assert "kernel transposed" not in html  # no student made that mistake
    assert "http" not in html.replace("http://www.w3.org/2000/svg", "")  # self-contained


def test_rerun_resumes_and_regrades_only_changed_work(graded, classroom):
    _, out, _ = graded
    before = (out / "grades.csv").read_bytes()
    again = run_batch(classroom, BatchOptions(["8-2"], out, jobs=2, timeout=3))
    assert again.graded == [] and again.seed == 11
    assert (out / "grades.csv").read_bytes() == before

    changed = classroom / "crash" / "ex8_2.py"
    original = changed.read_text()
    changed.write_text(GOOD)
    try:
        third = run_batch(classroom, BatchOptions(["8-2"], out, jobs=2, timeout=3))
        assert third.graded == ["crash"]
        assert json.loads((out / "results" / "crash.json").read_text())["total"] == 10.0
    finally:
        changed.write_text(original)


def test_a_rerun_without_a_student_moves_their_result_aside_and_says_so(graded, tmp_path):
    _, out, results = graded
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    smaller = tmp_path / "class"
    for student in ("good", "hardcoder"):
        write(smaller / student, "ex8_2.py", CLASS[student])
    summary = run_batch(smaller, BatchOptions(["8-2"], copy, jobs=2, timeout=3))
    assert summary.graded == []  # unchanged work is not graded again
    assert "hang" in summary.removed and "good" not in summary.removed
    assert (copy / "removed" / "results" / "hang.json").is_file()
    rows = list(csv.DictReader(io.StringIO((copy / "grades.csv").read_text())))
    assert [r["student"] for r in rows] == ["good", "hardcoder"]
    html = (copy / "report.html").read_text()
    assert "Moved aside" in html and "hang" in html.split("Moved aside", 1)[1].split("</p>")[0]


def test_the_report_counts_each_cause_apart(graded):
    _, out, results = graded
    html = (out / "report.html").read_text()
    summary = re.sub(r"<[^>]+>", "", html.split("<p>Parts: ", 1)[1].split("</p>", 1)[0])
    # "hang" timed out on one part; "empty" handed in no file: 5 parts missing.
    assert "timed out" in summary and "missing 5" in summary and "crashed" in summary
    hang_row = html.split('feedback/hang.md"', 1)[1].split("</tr>", 1)[0]
    assert "timed out" in hang_row and ASYM in hang_row


def test_a_conflicting_seed_is_refused(graded, classroom):
    _, out, _ = graded
    with pytest.raises(BatchError, match="--seed 11"):
        run_batch(classroom, BatchOptions(["8-2"], out, seed=12))


def test_a_broken_reference_stops_the_batch_and_grades_no_one(tmp_path, monkeypatch):
    from grader.engine.references import GraderError, LiveReference
    from grader.instructor import batch

    root = tmp_path / "class"
    for student in ("a", "b", "c"):
        write(root / student, "ex8_2.py", GOOD)
    broken = tmp_path / "solutions"
    write(broken, "ex8_2.py", replace_function(GOOD, ASYM, "    raise RuntimeError('oops')"))
    with monkeypatch.context() as patch:
        patch.setattr(batch, "default_reference", lambda record: LiveReference(broken))
        with pytest.raises(GraderError, match="reference solution failed"):
            run_batch(root, BatchOptions(["8-2"], tmp_path / "out", jobs=2, seed=1))
    # The students ran beside the reference, but none is graded against a broken one.
    assert list((tmp_path / "out" / "results").glob("*.json")) == []
    # The helper process was not left half-way through that run.
    summary = run_batch(root, BatchOptions(["8-2"], tmp_path / "out", jobs=2, seed=1))
    assert sorted(summary.graded) == ["a", "b", "c"]
    totals = [json.loads(p.read_text())["total"] for p in (tmp_path / "out" / "results").iterdir()]
    assert totals == [10.0, 10.0, 10.0]


def slow_class(tmp_path: Path, seconds: float, size: int = 6) -> Path:
    """`size` correct students, each a little slow (one part sleeps `seconds`)."""
    root = tmp_path / "class"
    slow = replace_function(
        GOOD,
        "dot_product_variance",
        f"    import time\n    time.sleep({seconds})\n    return float(d) * var_q * var_k",
    )
    for index in range(size):
        write(root / f"s{index}", "ex8_2.py", slow)
    return root


def test_kill_9_loses_nothing_graded_and_leaves_nothing_running(tmp_path):
    root = slow_class(tmp_path, 0.1)
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "grader.cli",
        "batch",
        str(root),
        "--exercise",
        "8-2",
        "--out",
        str(out),
        "--jobs",
        "2",
        "--seed",
        "3",
    ]
    scratch = tmp_path / "tmp"  # the grader's temporary folders: none may be left
    scratch.mkdir()
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, TMPDIR=str(scratch)),
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list((out / "results").glob("*.json"))) < 2:
        time.sleep(0.1)
    children = descendants(process.pid)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done = sorted(p.name for p in (out / "results").glob("*.json"))
    assert 2 <= len(done) < 6
    for path in (out / "results").glob("*.json"):
        json.loads(path.read_text())  # every file written is whole
    time.sleep(1.0)
    survivors = [pid for pid in children if running(pid)]
    assert not survivors, [command_line(pid) for pid in survivors]
    deadline = time.monotonic() + 10  # the helper removes the cases once it sees the grader gone
    while list(scratch.glob("attnkit-batch-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not list(scratch.glob("attnkit-batch-*"))
    summary = run_batch(root, BatchOptions(["8-2"], out, jobs=2))
    assert sorted(f"{s}.json" for s in summary.skipped) == done
    assert len(summary.graded) == 6 - len(done)
    assert (out / "grades.csv").read_text().count("\n") == 7


def test_report_renders_in_a_headless_browser(graded, tmp_path):
    if shutil.which("chromium") is None:
        # In CI (.ci/run sets CI) a missing browser is a failure, never a silent skip.
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed, so the report was not checked in a browser")
        pytest.skip("needs Debian's chromium (CI fails instead of skipping)")
    _, out, _ = graded
    screenshot = tmp_path / "report.png"
    subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={screenshot}",
            "--window-size=1100,1400",
            (out / "report.html").as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    from PIL import Image

    image = np.asarray(Image.open(screenshot).convert("RGB"), dtype=float)
    assert image.shape[:2] == (1400, 1100)
    blue = np.all(np.abs(image - [0x4A, 0x7B, 0xD0]) < 30, axis=-1)
    assert blue.sum() > 500  # the histogram bars were drawn
    from grader.instructor.outputs.outcomes import COLOURS, Outcome

    for outcome in (Outcome.TIMED_OUT, Outcome.CRASHED, Outcome.MISSING, Outcome.FLAGGED):
        colour = [int(COLOURS[outcome][i : i + 2], 16) for i in (1, 3, 5)]
        near = np.all(np.abs(image - colour) < 40, axis=-1)
        assert near.sum() > 30, f"no {outcome} words drawn"  # the outcomes' words, in colour
    assert (image.std(axis=(0, 1)) > 10).all()  # a page with content, not a blank one
    os.makedirs(out / "screens", exist_ok=True)
    shutil.copy(screenshot, out / "screens" / "report.png")


def test_a_helper_that_dies_mid_batch_is_replaced_and_nobody_pays_for_it(tmp_path):
    from grader.sandbox import processes

    root = slow_class(tmp_path, 0.1, size=4)
    out = tmp_path / "out"
    killed = []

    def kill_the_helper_once(student, document):
        if not killed:  # one student is in: the others are under way in the helper's children
            killed.append(processes._zygote.process.pid)
            os.kill(killed[0], signal.SIGKILL)

    summary = run_batch(root, BatchOptions(["8-2"], out, jobs=2, seed=2), kill_the_helper_once)
    assert killed and sorted(summary.graded) == [f"s{i}" for i in range(4)]
    rows = list(csv.DictReader(io.StringIO((out / "grades.csv").read_text())))
    assert [row["total"] for row in rows] == ["10"] * 4, rows
    assert processes._zygote.process.pid != killed[0]


def test_a_spinning_child_dies_with_its_grader_and_helper(tmp_path):
    """Grader and helper killed at once (kill -9 of the whole process group): the children,
    in sessions of their own, die too (their parent-death signal), busy loop or not. The
    grader's scratch (the reference's outputs, the students' files), which nobody is left to
    remove, is removed by the next batch, which names it (issue 45)."""
    root = tmp_path / "class"
    for student in ("spinner", "sleeper"):
        (root / student).mkdir(parents=True)
    (root / "spinner" / "ex8_2.py").write_text("while True:\n    pass\n")
    (root / "sleeper" / "ex8_2.py").write_text("import time\ntime.sleep(3600)\n")
    temporary = tmp_path / "tmp"  # the graders' temporary folder, watched here
    temporary.mkdir()
    environment = dict(os.environ, TMPDIR=str(temporary))
    command = [sys.executable, "-m", "grader.cli", "batch", str(root), "-e", "8-2"]
    command += ["--out", str(tmp_path / "out"), "--jobs", "2", "--timeout", "600"]
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=environment,
    )
    try:
        # The helper's children running submitted code (sessions of their own); the reference
        # runs first, so on a busy machine they may take a while to appear.
        deadline, children = time.monotonic() + 300, []
        while time.monotonic() < deadline and len(children) < 2:
            time.sleep(0.2)
            below = [pid for pid in descendants(process.pid) if pid != process.pid]
            children = session_leaders(below)
        assert children, "the children never started"
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    deadline = time.monotonic() + 10
    alive = children
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [pid for pid in children if running(pid)]
    assert not alive, "children outlived their grader"

    left = list(temporary.glob("attnkit-batch-*"))
    assert len(left) == 1 and (left[0] / "owner.json").exists(), left
    nobody = tmp_path / "nobody"  # a class whose only student handed nothing in: cheap
    (nobody / "ghost").mkdir(parents=True)
    again = subprocess.run(
        [sys.executable, "-m", "grader.cli", "batch", str(nobody), "-e", "8-2"]
        + ["--out", str(tmp_path / "again"), "--no-similarity", "--no-pictures"],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert not left[0].exists()
    assert str(left[0]) in again.stdout + again.stderr, again.stdout + again.stderr
    assert not list(temporary.glob("attnkit-*")), list(temporary.iterdir())


def test_a_killed_graders_scratch_is_removed_by_the_next_batch_and_named(tmp_path, monkeypatch):
    """kill -9 leaves a grader's scratch (the reference's outputs, the students' files) in the
    temporary folder; the next batch removes it once its grader is gone, and says so. A folder
    whose grader still runs, or whose owner cannot be read, is left alone."""
    from grader.instructor.files import OWNER_FILE, new_scratch

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        folders = {}
        for name, pid in (("gone", gone.pid), ("alive", alive.pid), ("unknown", None)):
            folder = new_scratch()
            (folder / "reference-8-2.out.npz").write_bytes(b"outputs")
            if pid is None:
                (folder / OWNER_FILE).unlink()
            else:
                started = None if name == "gone" else _start_time(pid)
                (folder / OWNER_FILE).write_text(json.dumps({"pid": pid, "started": started}))
            folders[name] = folder
        classroom = tmp_path / "class"
        write(classroom / "good", "ex8_2.py", GOOD)
        options = BatchOptions(["8-2"], tmp_path / "out", jobs=1, similarity=False)
        summary = run_batch(classroom, options)
    finally:
        alive.kill()
        alive.wait()
    assert not folders["gone"].exists()
    assert folders["alive"].exists() and folders["unknown"].exists()
    removed = [note for note in summary.notes if "scratch folder of a grader" in note]
    assert len(removed) == 1 and str(folders["gone"]) in removed[0], summary.notes
    # This batch's own scratch is gone with it.
    assert sorted(temporary.iterdir()) == sorted([folders["alive"], folders["unknown"]])


def _start_time(pid: int) -> str:
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        return handle.read().rsplit(")", 1)[1].split()[19]
