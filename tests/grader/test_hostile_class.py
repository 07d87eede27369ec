"""`grader batch` on a class that attacks it (tests/hostile_class.py): the honest students keep
10/10, every probe keeps 10/10 (its attack failed), nothing is left behind and the kit is
unchanged; as root, and as an ordinary user (tests/unprivileged.py).

Both modes run a copy of the kit in a folder of their own under /tmp, which is also the fence
the attacks never write outside of.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.hostile_class import ATTACKS, HONEST, hostile_class, probes
from tests.support.unprivileged import REPO, SKIP_REASON, UnprivilegedKit, copy_kit, run_command

pytestmark = [pytest.mark.slow, pytest.mark.ex8_2]

SOLUTION = (REPO / "solutions" / "ex8_2.py").read_text()
GOOD = "\n".join(line for line in SOLUTION.splitlines() if "SOLUTION" not in line) + "\n"
SECRET = {"ATTNKIT_SECRET_FOR_TESTS": "hunter2"}
KIT_PARTS = ("solutions", "grader", "attnkit", "exercises")
AUTOGRADER = Path("/autograder")
FORGED = '{"total": 10.0}'  # what results_writer writes
# What the grader can see of each attack (the kernel reports refused calls; the audit hook,
# refused opens and imports). env_reader reads its own (cleaned) environment: nothing to see.
EXPECTED_FLAGS = {
    "killer": "open",
    "group_killer": "open",
    "blind_signaller": "signal",
    "zeroer": "open",
    "proc_reader": "open",
    "classmate_reader": "open",
    "kit_writer": "open",
    "results_writer": "open",
    "ptracer": "ptrace",
    "forker": "process",
    "importer": "import",
    "linker": "open",
    "lingerer": "open",
}


def test_every_attack_compiles():
    probe = {"out": "/tmp/x/out", "submissions": "/tmp/x/class", "kit": "/k", "marker": "/tmp/m"}
    sources = hostile_class(GOOD, probe)
    assert set(sources) == set(ATTACKS) | set(HONEST)
    for student, source in sources.items():
        compile(source, f"{student}/ex8_2.py", "exec")
    assert "FENCE = '/tmp'" in sources["zeroer"]


def remove_forged_results() -> None:
    """What results_writer leaves where it could write /autograder/results/results.json."""
    forged = AUTOGRADER / "results" / "results.json"
    if forged.is_file() and not forged.is_symlink() and forged.read_text() == FORGED:
        forged.unlink()
    for folder in (AUTOGRADER / "results", AUTOGRADER):
        try:
            folder.rmdir()  # only if empty: never anything else's
        except OSError:
            pass


def lost_points(out: Path, student: str) -> list[str]:
    """Each part that did not pass, with its first failing check's message."""
    try:
        document = json.loads((out / "results" / f"{student}.json").read_text())
    except (OSError, ValueError) as error:
        return [f"no readable result: {error}"]
    found = []
    for exercise in document["exercises"]:
        for part in exercise["parts"]:
            if part["status"] != "passed":
                failing = [c for c in part["checks"] if not c["passed"]][:1]
                message = failing[0]["message"][:300] if failing else ""
                found.append(f"{part['name']} {part['status']}: {message}")
    return found


def kit_hashes(kit: Path) -> dict[str, str]:
    """Content, owner and mode of every file of the kit's own packages."""
    return {
        str(path.relative_to(kit)): hashlib.sha256(path.read_bytes()).hexdigest()
        + f" {path.stat().st_uid} {path.stat().st_mode:o}"
        for part in KIT_PARTS
        for path in sorted((kit / part).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def write_class(folder: Path, probe: dict) -> None:
    for student, source in hostile_class(GOOD, probe).items():
        (folder / student).mkdir(parents=True)
        (folder / student / "ex8_2.py").write_text(source)


def batch_args(submissions: Path, out: Path) -> list[str]:
    return [
        "-m",
        "grader.cli",
        "batch",
        str(submissions),
        "--exercise",
        "8-2",
        "--out",
        str(out),
        "--jobs",
        "2",
        "--seed",
        "5",
    ]


def as_root(base: Path) -> dict:
    """The kit copied to `base`; the batch run by this interpreter, as root."""
    kit = copy_kit(REPO, base / "kit")
    folders = {name: base / name for name in ("class", "out", "tmp", "spot")}
    folders["tmp"].mkdir(mode=0o755)
    folders["spot"].mkdir()
    folders["spot"].chmod(0o1777)  # like /tmp: anyone may leave something there
    env = {
        **os.environ,
        **SECRET,
        "PYTHONPATH": os.pathsep.join(p for p in [str(kit), os.environ.get("PYTHONPATH")] if p),
        "TMPDIR": str(folders["tmp"]),
    }
    found = run_command(
        [sys.executable, "-c", "import grader.kit; print(grader.kit.KIT)"], kit, env, timeout=60
    )
    assert found.stdout.strip() == str(kit), found  # never the checkout itself

    def run(submissions, out):
        return run_command([sys.executable, *batch_args(submissions, out)], kit, env, 600)

    return {"kit": kit, "folders": folders, "run": run, "give": lambda path: None}


def as_user(built: UnprivilegedKit, as_root: bool = False) -> dict:
    """The batch run as the unprivileged user, from the kit copy of `built`; or as root from that
    copy, which every user can read, so that each child drops to a user id of its own."""
    folders = {
        "class": built.base / "class",
        "out": built.writable_folder("out"),
        "tmp": built.writable_folder("tmp"),
        "spot": built.base / "spot",
    }
    folders["spot"].mkdir()
    folders["spot"].chmod(0o1777)
    extra = {**SECRET, "TMPDIR": str(folders["tmp"])}

    def run(submissions, out):
        return built.run(
            batch_args(submissions, out), built.home, 600, env_extra=extra, as_root=as_root
        )

    give = (lambda path: None) if as_root else built.give
    return {"kit": built.kit, "folders": folders, "run": run, "give": give}


# CI runs the class as root (children as users of their own, the interpreter under a 0700
# /root) and as an ordinary user; as root from a kit every user can read, with -m long: the
# children are the same as in the first mode (each mode costs CI about 27 s of two cores).
MODES = ["root", "unprivileged", pytest.param("root-slot-users", marks=pytest.mark.long)]


@pytest.fixture(scope="module", params=MODES)
def graded(request):
    if request.param == "root" and (not hasattr(os, "geteuid") or os.geteuid() != 0):
        pytest.skip("the root mode runs the batch as root")
    if request.param != "root" and SKIP_REASON:
        pytest.skip(SKIP_REASON)
    if request.param == "root":
        base = Path(tempfile.mkdtemp(prefix="attnkit-hostile-", dir="/tmp"))
        base.chmod(0o755)
        built, setup = None, as_root(base)
    else:
        built = UnprivilegedKit(prefix="attnkit-hostile-")
        base = built.base
        setup = as_user(built, as_root=request.param == "root-slot-users")
    folders = setup["folders"]
    probe = {
        "out": folders["out"],
        "submissions": folders["class"],
        "kit": setup["kit"],
        "marker": folders["spot"] / "marker",
        "fence": base,
    }
    write_class(folders["class"], probe)
    setup["give"](folders["class"])
    before = kit_hashes(setup["kit"])
    autograder_before = AUTOGRADER.exists()
    try:
        try:
            done = setup["run"](folders["class"], folders["out"])
            returncode, output = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as error:
            returncode, output = "timeout", f"{error.stdout or ''}{error.stderr or ''}"
        after = kit_hashes(setup["kit"])
        grades = folders["out"] / "grades.csv"
        rows = list(csv.DictReader(io.StringIO(grades.read_text()))) if grades.exists() else []
        totals = {row["student"]: float(row["total"]) for row in rows}
        state = folders["out"] / "batch.json"
        result = {
            "mode": request.param,
            "isolation": json.loads(state.read_text())["isolation"] if state.exists() else "",
            "returncode": returncode,
            "output": output,
            "totals": totals,
            "why": {s: lost_points(folders["out"], s) for s, t in totals.items() if t < 10},
            "rows": rows,
            "left_behind": sorted(str(p) for p in folders["spot"].glob("marker*")),
            "victim": (folders["out"] / "results" / "victim.json").exists(),
            "autograder_made": AUTOGRADER.exists() and not autograder_before,
            "changed": sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n)),
        }
        print(
            f"\n[{request.param}] exit {returncode}; totals {result['totals']}; left behind "
            f"{result['left_behind']}; kit changed {result['changed']}\n{output[-3000:]}"
        )
        for student, why in result["why"].items():
            print(f"  {student}: " + "\n    ".join(why))
        yield result
    finally:
        if not autograder_before:
            remove_forged_results()
        if built is not None:
            built.cleanup()
        else:
            shutil.rmtree(base, ignore_errors=True)


def test_the_batch_finishes(graded):
    assert graded["returncode"] == 0, graded["output"][-3000:]


def test_every_student_gets_a_row(graded):
    expected = sorted([*ATTACKS, *HONEST])
    assert [row["student"] for row in graded["rows"]] == expected, graded["output"][-2000:]


def test_honest_students_keep_full_marks(graded):
    assert {s: graded["totals"].get(s) for s in HONEST} == {s: 10.0 for s in HONEST}


@pytest.mark.parametrize("student", probes())
def test_the_attack_fails(graded, student):
    # 9 points: the attack worked (bilinear_asymmetry answered wrong on purpose); fewer: the
    # grader or a classmate's attack took more.
    assert graded["totals"].get(student) == 10.0, graded["why"].get(student)


def test_nothing_is_left_behind(graded):
    assert graded["left_behind"] == []
    assert not graded["victim"]
    assert not graded["autograder_made"]


def test_the_kit_is_unchanged(graded):
    assert graded["changed"] == []


def test_the_isolation_note_says_what_held(graded):
    assert graded["isolation"].startswith("sandboxed (Landlock"), graded["isolation"]
    # As root, always, even with the interpreter under a 0700 /root ("root" mode).
    own = "each child as a user of its own, without capabilities"
    assert (own in graded["isolation"]) == (graded["mode"] != "unprivileged")
    assert "IPC and network namespaces of its own" in graded["isolation"]


def test_attempts_are_flagged_and_honest_students_are_not(graded):
    flags = {row["student"]: set(filter(None, row["flags"].split(";"))) for row in graded["rows"]}
    refused = {
        s: sorted(f.split(":")[0] for f in found if f.startswith("refused-"))
        for s, found in flags.items()
    }
    print(refused)
    assert {s: refused[s] for s in HONEST} == {s: [] for s in HONEST}
    for student, kind in EXPECTED_FLAGS.items():
        assert f"refused-{kind}" in refused[student], (student, refused[student])
