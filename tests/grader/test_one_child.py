"""`grader batch --one-child` runs a student's exercises that train nothing in one child, one
file after another (issue 48): each is graded as it would be in a child of its own, as far as
one process allows (what it does not: tests/heldout_attacks_r9/). What one exercise's
code breaks (a crash at import, a hang, a setting it changes, a call the sandbox refuses) costs
that exercise alone, and the gradebook is the same, byte for byte, as with a child per exercise
(GRADER_ONE_CHILD=off)."""

import json
from pathlib import Path

import pytest

from grader.instructor.batch import BatchOptions, one_child_per_student, run_batch
from grader.instructor.course.stubs import package_dir
from tests.support.grading import replace_function

pytestmark = pytest.mark.ex8_1


def solution(name: str) -> str:
    text = (package_dir("solutions") / name).read_text()
    return "\n".join(line for line in text.splitlines() if "SOLUTION" not in line) + "\n"


GOOD_1, GOOD_6 = solution("ex8_1.py"), solution("ex8_6.py")
# Settings honest code may change at import, each of which a fresh child would not have.
PATCHES = """
import os, random, sys, warnings
import keras
import numpy as np
keras.config.set_floatx("float64")
np.seterr(all="raise")
np.set_printoptions(precision=2)
warnings.simplefilter("ignore")
sys.path.insert(0, "/nowhere")
np.random.seed(5)
random.seed(5)
os.environ["ATTNKIT_PATCHED"] = "1"
"""
# Raises at import unless the process is as a fresh child has it.
FRESH = """
import os, random, sys, warnings
import keras
import numpy as np
_state = {
    "floatx": keras.config.floatx(),
    "seterr": np.geterr()["divide"],
    "precision": np.get_printoptions()["precision"],
    "path": "/nowhere" in sys.path,
    "environ": os.environ.get("ATTNKIT_PATCHED"),
    "filters": any(f[0] == "ignore" and f[1] is None and f[2] is Warning for f in warnings.filters),
}
if _state != {"floatx": "float32", "seterr": "warn", "precision": 8, "path": False,
              "environ": None, "filters": False}:
    raise RuntimeError(f"not fresh: {_state}")
"""
CLASS = {
    "honest": (GOOD_1, GOOD_6),
    "patcher": (PATCHES + GOOD_1, FRESH + GOOD_6),
    "crasher": ("import os\nos._exit(3)\n", GOOD_6),
    "hanger": (
        replace_function(GOOD_1, "lstm_param_count", "    while True:\n        pass"),
        GOOD_6,
    ),
    "refuser": (
        "try:\n    open('/etc/shadow').read()\nexcept OSError:\n    pass\n" + GOOD_1,
        GOOD_6,
    ),
    # The same process? ex8_1 leaves its process id in the folder it works in; ex8_6 says
    # whether it finds its own.
    "witness": (
        "import os\nopen('pid.txt', 'w').write(str(os.getpid()))\n" + GOOD_1,
        "import os\n_mine = os.path.exists('pid.txt') and open('pid.txt').read() == "
        "str(os.getpid())\nraise RuntimeError(f'one child: {_mine}')\n",
    ),
}


def grade(root: Path, out: Path, monkeypatch, one_child: str) -> dict:
    monkeypatch.setenv("GRADER_ONE_CHILD", one_child)
    options = BatchOptions(["8-1", "8-6"], out, jobs=2, timeout=3, seed=7, similarity=False)
    options.pictures = False
    run_batch(root, options)
    return {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    for student, (first, sixth) in CLASS.items():
        (root / student).mkdir()
        (root / student / "ex8_1.py").write_text(first)
        (root / student / "ex8_6.py").write_text(sixth)
    outs = {}
    with pytest.MonkeyPatch.context() as monkeypatch:
        for mode in ("on", "off"):
            outs[mode] = tmp_path_factory.mktemp(f"out-{mode}")
            grade(root, outs[mode], monkeypatch, mode)
    return outs


def results_of(out: Path) -> dict:
    return {p.stem: json.loads(p.read_text()) for p in (out / "results").glob("*.json")}


def exercise(results, student, exercise_id):
    return next(e for e in results[student]["exercises"] if e["exercise"] == exercise_id)


def text_of(results, student, exercise_id) -> str:
    return json.dumps(exercise(results, student, exercise_id))


def test_a_students_exercises_share_one_child(graded):
    on, off = results_of(graded["on"]), results_of(graded["off"])
    assert "one child: True" in text_of(on, "witness", "8-6")
    assert "one child: False" in text_of(off, "witness", "8-6")
    # Asked for (--one-child), in a class of two students a slot or more; never by default.
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.delenv("GRADER_ONE_CHILD", raising=False)
        assert one_child_per_student(4, 2, asked=True)
        assert not one_child_per_student(3, 2, asked=True)
        assert not one_child_per_student(100, 2, asked=False)


def test_what_one_exercise_breaks_costs_it_alone(graded):
    results = results_of(graded["on"])
    full = exercise(results, "honest", "8-6")["max_score"]
    for student in ("honest", "patcher", "crasher", "hanger", "refuser"):
        assert exercise(results, student, "8-6")["score"] == full, text_of(results, student, "8-6")
    assert (
        exercise(results, "honest", "8-1")["score"] == exercise(results, "patcher", "8-1")["score"]
    )
    assert exercise(results, "crasher", "8-1")["score"] == 0
    assert "status 3" in text_of(results, "crasher", "8-1")
    hung = {p["name"]: p for p in exercise(results, "hanger", "8-1")["parts"]}
    assert hung["lstm_param_count"]["score"] == 0
    for name in ("gru_param_count", "simple_rnn_param_count", "param_count_coefficients"):
        assert hung[name]["score"] == hung[name]["max_score"], name  # (doubling_ratio calls it)
    # What the sandbox refused is flagged for the exercise that tried it, not the next one.
    if "refused-open:8-1" in results["refuser"]["flags"]:  # sandboxed (Landlock) machines
        assert [f for f in results["refuser"]["flags"] if f.startswith("refused-")] == [
            "refused-open:8-1"
        ]


def test_the_gradebook_is_the_same_as_with_a_child_per_exercise(graded):
    on, off = graded["on"], graded["off"]
    for student in set(CLASS) - {"witness"}:
        assert (on / "feedback" / f"{student}.md").read_text() == (
            off / "feedback" / f"{student}.md"
        ).read_text(), student
        assert json.loads((on / "results" / f"{student}.json").read_text()) == json.loads(
            (off / "results" / f"{student}.json").read_text()
        )


def test_a_false_next_mark_moves_a_refusal_to_another_file_but_never_hides_it():
    """The child marks where each file begins ("next <part>"); marks come from a process that
    runs submitted code, so one that names no real file's first part, or goes back, cannot take
    a refusal out of every count: it lands in the file at or before the part it names."""
    from grader.sandbox import supervisor

    mine, theirs = supervisor.channel()
    watch = supervisor.Watch(mine)
    supervisor.tell_started(theirs, None)
    for message in ("open a", "next 2", "open b", "next 3", "open c", "next 999", "open d",
                    "next 1", "open e"):  # fmt: skip
        theirs.send(message.encode())
    watch.poll()
    first_file, second_file = watch.report(0, 3), watch.report(3, None)  # parts 0-2, then 3-
    assert first_file["refused"] == {"open": 2}  # a, and b after the false mark "next 2"
    assert second_file["refused"] == {"open": 3}  # c, d past every part, e after going back
    assert watch.report()["refused"] == {"open": 5}
    assert sorted(first_file["refused_examples"]["open"]) == ["a", "b"]
    theirs.close()
    watch.close()


def test_a_warning_shown_by_one_file_is_shown_again_for_the_next():
    """A fresh process shows a library's warning the first time; so must the next file."""
    import warnings

    import keras
    import numpy as np

    from grader.sandbox.shared_state import Snapshot

    def size_one_softmax():  # Keras warns: "a softmax over an axis of size 1"
        keras.ops.softmax(np.ones((1, 1), "float32"))

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("default")
        snapshot = Snapshot()  # with the "default" filter in place, as a child has it
        size_one_softmax()
        size_one_softmax()
        assert sum("softmax" in str(w.message) for w in shown) == 1  # once, as a process does
        snapshot.restore("")
        size_one_softmax()
        assert sum("softmax" in str(w.message) for w in shown) == 2
