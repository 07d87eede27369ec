"""`grader gather` takes only what the grader wrote (issue 45, the third red team): a shard's
folder can be written by others than the grader (a shared file system, a cluster's scratch).
Without a key, gather refuses what the split itself rules out (a student listed by two shards
or by one they do not belong to, a result file of no listed student, a result about someone
else, a student not in the class); with GRADER_SHARD_KEY, every result must carry the grader's
signature, so that an edited or swapped result is refused too. Each refusal names the shard and
the command that grades it again."""

import json
import os
import shutil

import pytest

from grader.instructor import files
from grader.instructor.batch import SHARD_FILE, BatchOptions, run_batch
from grader.instructor.course.shards import shard_of
from grader.instructor.gather import GatherError, gather
from tests.grader import test_shards
from tests.grader.test_shards import shard_folders

pytestmark = pytest.mark.ex8_2

# The demo class graded in three shards, once for this module too.
graded = test_shards.graded

KEY = "a course's secret, never a child's"


@pytest.fixture
def shards(graded, tmp_path):
    """Copies of the three shards' folders, to tamper with."""
    return [shutil.copytree(folder, tmp_path / folder.name) for folder in shard_folders(graded)]


def _holding(shards, student):
    return next(
        f for f in shards if student in json.loads((f / SHARD_FILE).read_text())["students"]
    )


def _result(folder, student):
    return files.result_path(folder, student)


def _gather(shards, tmp_path, classroom=None):
    options = BatchOptions(["8-2"], similarity=False, pictures=False)
    return gather(shards, tmp_path / "gathered", classroom, options)


def _signed(shards, monkeypatch):
    """The shards as a batch with the key set writes them: every result signed."""
    monkeypatch.setenv(files.SHARD_KEY_VARIABLE, KEY)
    for folder in shards:
        mark = json.loads((folder / SHARD_FILE).read_text())
        mark["signed"] = True
        (folder / SHARD_FILE).write_text(json.dumps(mark))
        for student in mark["students"]:
            files.sign_result(folder, student, mark["seed"])
    return shards


def test_a_student_listed_by_a_shard_they_do_not_belong_to_is_refused(shards, tmp_path):
    bob = _holding(shards, "bob")
    other = next(f for f in shards if f != bob)
    shutil.copyfile(_result(bob, "bob"), _result(other, "bob"))
    mark = json.loads((other / SHARD_FILE).read_text())
    mark["students"].append("bob")
    (other / SHARD_FILE).write_text(json.dumps(mark))
    with pytest.raises(GatherError, match="'bob' is listed by shard|belongs to shard") as error:
        _gather(shards, tmp_path)
    assert "grader batch" in str(error.value)


def test_a_result_file_of_no_listed_student_is_refused(shards, tmp_path):
    planted = shards[0] / "results" / "..%2F..%2Fescaped.json"
    planted.write_text(json.dumps({"student": "ghost", "exercises": []}))
    with pytest.raises(GatherError, match="is the result of no student"):
        _gather(shards, tmp_path)
    assert not (tmp_path / "gathered").exists()


def test_a_planted_student_with_full_marks_is_refused(graded, shards, tmp_path):
    count = len(shards)
    ghost = next(f"ghost{n}" for n in range(100) if shard_of(f"ghost{n}", count) == 0)
    document = json.loads(
        _result(
            shards[0], json.loads((shards[0] / SHARD_FILE).read_text())["students"][0]
        ).read_text()
    )
    document["student"] = ghost
    _result(shards[0], ghost).write_text(json.dumps(document))
    mark = json.loads((shards[0] / SHARD_FILE).read_text())
    mark["students"].append(ghost)
    (shards[0] / SHARD_FILE).write_text(json.dumps(mark))
    with pytest.raises(GatherError, match=f"not in .*{ghost}"):
        _gather(shards, tmp_path, graded / "class")


def test_a_result_about_someone_else_is_refused(shards, tmp_path):
    carol = _holding(shards, "carol")
    document = json.loads(_result(carol, "carol").read_text())
    document["student"] = "<script>alert(1)</script>"
    _result(carol, "carol").write_text(json.dumps(document))
    with pytest.raises(GatherError, match="'carol': its result is '<script>"):
        _gather(shards, tmp_path)


def test_with_the_key_an_edited_result_is_refused(shards, tmp_path, monkeypatch):
    _signed(shards, monkeypatch)
    bob = _holding(shards, "bob")
    document = json.loads(_result(bob, "bob").read_text())
    for part in document["exercises"][0]["parts"]:
        part["score"], part["status"] = part["max_score"], "passed"
    document["total"] = 10.0
    _result(bob, "bob").write_text(json.dumps(document))
    with pytest.raises(
        GatherError, match="'bob': its result does not carry the grader's signature"
    ):
        _gather(shards, tmp_path)


def test_with_the_key_swapped_results_are_refused(shards, tmp_path, monkeypatch):
    _signed(shards, monkeypatch)
    alice, bob = _holding(shards, "alice"), _holding(shards, "bob")
    first, second = _result(alice, "alice"), _result(bob, "bob")
    one, two = json.loads(first.read_text()), json.loads(second.read_text())
    one["student"], two["student"] = "bob", "alice"
    first.write_text(json.dumps(two))
    second.write_text(json.dumps(one))
    with pytest.raises(GatherError, match="does not carry the grader's signature"):
        _gather(shards, tmp_path)


def test_with_the_key_signed_shards_gather_and_unsigned_ones_are_refused(
    graded,
    shards,
    tmp_path,
    monkeypatch,
):
    unsigned = [shutil.copytree(f, tmp_path / "unsigned" / f.name) for f in shards]
    _signed(shards, monkeypatch)
    summary = _gather(shards, tmp_path)
    assert len(summary.graded) == 11
    with pytest.raises(GatherError, match="carry no signature"):
        gather(unsigned, tmp_path / "again", None, BatchOptions(["8-2"], similarity=False))
    monkeypatch.delenv(files.SHARD_KEY_VARIABLE)
    with pytest.raises(GatherError, match="are signed: set GRADER_SHARD_KEY"):
        gather(shards, tmp_path / "third", None, BatchOptions(["8-2"], similarity=False))


def test_a_shard_graded_with_the_key_signs_every_result_and_no_child_sees_the_key(
    tmp_path, monkeypatch
):
    from grader.instructor.course.stubs import package_dir
    from grader.sandbox import clean_environment

    monkeypatch.setenv(files.SHARD_KEY_VARIABLE, KEY)
    assert files.SHARD_KEY_VARIABLE not in clean_environment()
    classroom = tmp_path / "class"
    good = (package_dir("solutions") / "ex8_2.py").read_text()
    names = [n for n in (f"s{k}" for k in range(40)) if shard_of(n, 2) == 0][:2]
    for name in names:
        (classroom / name).mkdir(parents=True)
        (classroom / name / "ex8_2.py").write_text(good)
    out = tmp_path / "shard"
    options = BatchOptions(["8-2"], out, jobs=2, seed=3, shard=(0, 2), pictures=False)
    options.similarity = False
    run_batch(classroom, options)
    assert json.loads((out / SHARD_FILE).read_text())["signed"] is True
    for name in names:
        assert files.signature_problem(out, name, 3) is None
    path = files.result_path(out, names[0])
    path.write_text(path.read_text().replace('"total": 10.0', '"total": 9.0'))
    assert "changed after grading" in files.signature_problem(out, names[0], 3)
    assert os.environ[files.SHARD_KEY_VARIABLE] == KEY
