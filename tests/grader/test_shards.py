"""`grader batch --shard K/N` and `grader gather`: the demo class graded in three shards and
gathered is the unsharded batch with the same seed, file for file; shards that disagree, are
missing or stopped half-way are refused, named, and the printed command completes them."""

import filecmp
import hashlib
import json
import os
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader import cli
from grader.instructor.batch import BatchOptions, run_batch
from grader.instructor.course.shards import parse_shard, shard_of
from grader.instructor.gather import GatherError, gather, split_arguments
from grader.instructor.outputs.outcomes import SHARED_FILE
from grader.kit import KIT

pytestmark = pytest.mark.ex8_2

EXAMPLES = KIT / "examples" / "submissions"
SEED = 5
SHARDS = 3
COMMON = ["-e", "8-2", "--seed", str(SEED), "--timeout", "6", "--jobs", "2", "--no-pictures"]


def expected_shard(student_id: str, count: int) -> int:
    """The split as docs/cluster.md promises it, computed here from the words of the promise."""
    digest = hashlib.sha256(student_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], byteorder="big") % count


def invoke(*words: str):
    return CliRunner().invoke(cli.main, [str(w) for w in words])


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The demo class graded whole and in three shards (through the CLI, as an instructor
    would), the same seed and limits; the class is `graded / "class"`. Without erin, whose
    endless loop spins a core to the limit in every run: a hang is graded alike in any shard
    (test_batch.py grades hers), and here it cost 12 s of CPU."""
    root = tmp_path_factory.mktemp("shards")
    shutil.copytree(EXAMPLES, root / "class", ignore=shutil.ignore_patterns("erin"))
    whole = run_batch(
        root / "class",
        BatchOptions(["8-2"], root / "whole", jobs=2, timeout=6, seed=SEED, pictures=False),
    )
    assert len(whole.students) == 11
    for index in range(SHARDS):
        out = root / f"out-{index}"
        result = invoke(
            "batch", root / "class", *COMMON, "--shard", f"{index}/{SHARDS}", "--out", out
        )
        assert result.exit_code == 0, result.output
    return root


def shard_folders(root: Path) -> list[Path]:
    return [root / f"out-{index}" for index in range(SHARDS)]


def same_tree(left: Path, right: Path) -> list[str]:
    """The files that differ (or are only on one side) between two output folders."""
    differing = []
    comparison = filecmp.dircmp(left, right)
    stack = [(comparison, Path())]
    while stack:
        node, where = stack.pop()
        differing += [str(where / n) for n in node.left_only + node.right_only]
        _, mismatch, errors = filecmp.cmpfiles(
            node.left, node.right, node.common_files, shallow=False
        )
        differing += [str(where / n) for n in mismatch + errors]
        stack += [(sub, where / name) for name, sub in node.subdirs.items()]
    return differing


def test_the_split_is_the_promised_hash_and_adding_a_student_moves_nobody():
    ids = [f"student{n}" for n in range(400)] + ["Zoë", "李雷", "a b"]
    for count in (1, 2, 3, 7):
        split = {i: shard_of(i, count) for i in ids}
        assert split == {i: expected_shard(i, count) for i in ids}
        later = {i: shard_of(i, count) for i in [*reversed(ids), "newcomer", "another"]}
        assert all(later[i] == split[i] for i in ids)  # order and newcomers change nothing
    sizes = [list(split.values()).count(k) for k in range(7)]
    assert min(sizes) > 403 / 7 * 0.6  # every shard gets a share, none is starved


@pytest.mark.parametrize(
    "given,words",
    [("3/2", "0 to N-1"), ("0/0", "at least 1"), ("x", "K/N"), ("-1/2", "K/N"), ("1/", "K/N")],
)
def test_a_bad_shard_is_a_usage_error_that_says_what_is_wrong(given, words, tmp_path):
    with pytest.raises(ValueError, match=words):
        parse_shard(given)
    result = invoke("batch", EXAMPLES, "-e", "8-2", "--seed", 1, "--shard", given)
    assert result.exit_code == 2
    assert "--shard" in result.output and words in result.output
    assert not (tmp_path / "grading-results").exists()


def test_a_shard_needs_the_seed_and_leaves_class_wide_options_to_gather(tmp_path):
    result = invoke("batch", EXAMPLES, "-e", "8-2", "--shard", "0/2", "--out", tmp_path / "o")
    assert result.exit_code == 2 and "--seed" in result.output
    result = invoke("batch", EXAMPLES, "-e", "8-2", "--seed", 1, "--shard", "0/2", "--written")
    assert result.exit_code == 2 and "gather" in result.output
    assert not (tmp_path / "o").exists()


def test_each_student_is_graded_in_exactly_their_shard_and_the_folder_says_what_it_is(graded):
    everyone = json.loads((graded / "whole" / "batch.json").read_text())
    seen = []
    for index, folder in enumerate(shard_folders(graded)):
        mark = json.loads((folder / "shard.json").read_text())
        assert mark["shard"] == [index, SHARDS] and mark["finished"] is True
        assert mark["seed"] == SEED == everyone["seed"] and mark["exercises"] == ["8-2"]
        assert {s: expected_shard(s, SHARDS) for s in mark["students"]} == dict.fromkeys(
            mark["students"], index
        )
        results = sorted(p.stem for p in (folder / "results").glob("*.json"))
        assert results == sorted(mark["students"])
        assert not (folder / "grades.csv").exists()  # the class's outputs are gather's
        seen += mark["students"]
    assert sorted(seen) == sorted(p.stem for p in (graded / "whole" / "results").glob("*"))


def test_gathered_shards_are_the_unsharded_batch_file_for_file(graded, tmp_path):
    """Also the batch's own promise: the same seed gives the same files, byte for byte (the
    shards and the whole are separate runs; another seed draws other hidden cases:
    test_records.py)."""
    result = invoke("gather", *shard_folders(graded), "--out", tmp_path / "out", graded / "class")
    assert result.exit_code == 0, result.output
    whole, gathered = graded / "whole", tmp_path / "out"
    assert (gathered / "grades.csv").read_bytes() == (whole / "grades.csv").read_bytes()
    assert (gathered / "similarity.csv").is_file()  # across every student, not per shard
    assert same_tree(whole, gathered) == []
    # A gathered folder is a batch's: the unsharded batch resumes it without grading anyone.
    again = invoke("batch", graded / "class", *COMMON, "--out", gathered)
    assert again.exit_code == 0 and "0 graded, 11 already graded" in again.output


@pytest.mark.parametrize(
    "key,value",
    [
        ("seed", SEED + 1),
        ("exercises", ["8-1"]),
        ("cases_hash", "0" * 64),
        ("grader_version", "0.0.9+results1"),
    ],
)
def test_shards_that_disagree_are_refused_naming_what_differs(graded, tmp_path, key, value):
    folders = [shutil.copytree(f, tmp_path / f.name) for f in shard_folders(graded)]
    mark = json.loads((folders[1] / "shard.json").read_text())
    mark[key] = value
    (folders[1] / "shard.json").write_text(json.dumps(mark))
    with pytest.raises(GatherError, match=key) as refused:
        gather(folders, tmp_path / "out")
    assert str(folders[1]) in str(refused.value)
    assert not (tmp_path / "out").exists()


def test_a_missing_shard_is_named_with_the_command_that_grades_it(graded, tmp_path):
    given = [graded / "out-0", graded / "out-2"]
    result = invoke("gather", *given, "--out", tmp_path / "out", graded / "class")
    assert result.exit_code == 1
    assert f"missing shards: 1/{SHARDS}" in result.output
    command = next(line for line in result.output.splitlines() if "grader batch" in line)
    words = shlex.split(command.strip())
    assert words[words.index("--shard") + 1] == f"1/{SHARDS}"
    assert words[words.index("--out") + 1] == str(graded / "out-1")
    assert words[words.index("--seed") + 1] == str(SEED)
    assert not (tmp_path / "out").exists()


def test_a_stopped_shard_is_named_and_its_printed_command_completes_the_gradebook(graded, tmp_path):
    """A shard killed half-way: shard.json still says unfinished and a result is missing.
    Gather names it; the command it prints grades only what is missing; gather then writes
    the unsharded gradebook."""
    folders = [shutil.copytree(f, tmp_path / f.name) for f in shard_folders(graded)]
    mark = json.loads((folders[2] / "shard.json").read_text())
    lost = mark["students"][0]
    (folders[2] / "results" / f"{lost}.json").unlink()
    mark["finished"] = False
    mark["command"][mark["command"].index("--out") + 1] = str(folders[2])
    (folders[2] / "shard.json").write_text(json.dumps(mark))

    result = invoke("gather", *folders, "--out", tmp_path / "out", graded / "class")
    assert result.exit_code == 1 and f"unfinished shards: 2/{SHARDS}" in result.output
    command = next(line for line in result.output.splitlines() if "grader batch" in line)
    rerun = invoke(*shlex.split(command.strip())[1:])
    assert rerun.exit_code == 0, rerun.output
    assert f"1 graded, {len(mark['students']) - 1} already graded" in rerun.output

    result = invoke("gather", *folders, "--out", tmp_path / "out", graded / "class")
    assert result.exit_code == 0, result.output
    whole = (graded / "whole" / "grades.csv").read_bytes()
    assert (tmp_path / "out" / "grades.csv").read_bytes() == whole


def test_a_student_added_after_the_shards_ran_is_named_with_their_shard(graded, tmp_path):
    later = shutil.copytree(graded / "class", tmp_path / "class")
    shutil.copytree(later / "alice", later / "newcomer")
    with pytest.raises(GatherError, match="newcomer") as refused:
        gather(shard_folders(graded), tmp_path / "out", later)
    assert f"shard {expected_shard('newcomer', SHARDS)}/{SHARDS}: newcomer" in str(refused.value)


def test_the_arguments_split_into_shards_and_the_class(graded, tmp_path):
    shards, submissions = split_arguments([*shard_folders(graded), tmp_path / "gone", EXAMPLES])
    assert shards == [*shard_folders(graded), tmp_path / "gone"] and submissions == EXAMPLES
    with pytest.raises(GatherError, match="at most one folder"):
        split_arguments([graded / "out-0", EXAMPLES, KIT / "docs"])


def test_a_file_shared_across_shards_is_flagged_in_both(graded, tmp_path):
    """One file under two names (a hard link) in the folders of two students graded in
    different shards: each shard flags its student, as an unsharded batch flags both."""
    root = tmp_path / "class"
    for student in ("ann", "cat", "ben"):
        (root / student).mkdir(parents=True)
    (root / "ann" / "notes.txt").write_text("mine\n")
    os.link(root / "ann" / "notes.txt", root / "cat" / "notes.txt")
    (root / "ben" / "notes.txt").write_text("mine\n")  # alike, but not the same file
    assert expected_shard("ann", 2) != expected_shard("cat", 2)
    flags = {}
    for index in range(2):
        out = tmp_path / f"out-{index}"
        # The demo's exercise and seed: its references are computed once, by the fixture.
        options = BatchOptions(["8-2"], out, jobs=1, seed=SEED, pictures=False, shard=(index, 2))
        for student in run_batch(root, options).students:
            flags[student] = json.loads((out / "results" / f"{student}.json").read_text())["flags"]
    assert {s for s, f in flags.items() if SHARED_FILE in f} == {"ann", "cat"}
    assert sorted(flags) == ["ann", "ben", "cat"]
