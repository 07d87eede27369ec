"""The `grader` command: exit codes, formats, and a `list` that never imports TensorFlow."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.cli import main


def run(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env)


def test_list_is_fast_because_it_never_imports_tensorflow():
    code = (
        "import sys; from click.testing import CliRunner; from grader.cli import main; "
        "r = CliRunner().invoke(main, ['list']); print(r.output); "
        "assert r.exit_code == 0; assert 'tensorflow' not in sys.modules; "
        "assert 'keras' not in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "8-2" in done.stdout and "10 pts" in done.stdout


def test_show_explains_the_task():
    result = run("show", "8-2")
    assert result.exit_code == 0
    for phrase in ("exercises/ex8_2.py", "ScaledDotScore", "3 pt", "Total: 10 points"):
        assert phrase in result.output


@pytest.mark.parametrize(
    "args,phrase",
    [
        (["check", "8-7"], "Unknown exercise '8-7'. Known exercises: 8-1, 8-2"),
        (["show", "82"], "Did you mean 8-2?"),
        (["check", "8-2", "--part", "Scaled"], "no part 'Scaled'"),
        (["check"], "Name an exercise"),
        (["check", "8-2", "--submission", "no/such/folder"], "does not exist"),
        (["check", "8-2", "--format", "xml"], "Invalid value for '--format'"),
    ],
)
def test_usage_errors_exit_2_and_say_what_to_do(args, phrase):
    result = run(*args)
    assert result.exit_code == 2
    assert phrase in result.output


@pytest.mark.parametrize(
    "written,exercise",
    [
        ("MHA", "mha"),
        ("Masked_Softmax", "masked-softmax"),
        ("ex8_2", "8-2"),
        ("8.3", "8-3"),
        ("exercises/ex8_2.py", "8-2"),
        ("exercises\\lab_pointer.ipynb", "pointer"),
        ("lab_modern_hopfield", "modern-hopfield"),
    ],
)
def test_an_exercise_is_found_however_a_student_writes_it(written, exercise):
    result = run("show", written)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Exercise {exercise} "), result.output[:200]


def test_check_of_a_file_grades_that_file(tmp_path):
    from tests.support.unprivileged import REPO

    (tmp_path / "mine").mkdir()
    solution = (REPO / "solutions" / "ex8_2.py").read_text()
    (tmp_path / "mine" / "ex8_2.py").write_text(solution)
    result = run("check", str(tmp_path / "mine" / "ex8_2.py"), "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["score"] == 10.0


@pytest.mark.parametrize("name", ["ex8_2 (1).py", "ex8_2__einsum.py", "ex8_2-final.py"])
def test_check_of_a_file_saved_under_another_name_grades_that_file(tmp_path, name):
    """A download or a copy keeps the exercise's name with something after it; the file named
    is graded, not the ex8_2.py beside it (here the untouched stub, which would score 0)."""
    from tests.support.unprivileged import REPO

    solution = (REPO / "solutions" / "ex8_2.py").read_text()
    (tmp_path / name).write_text(solution)
    (tmp_path / "ex8_2.py").write_text((REPO / "exercises" / "ex8_2.py").read_text())
    result = run("check", str(tmp_path / name), "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["score"] == 10.0
    assert run("show", "ex8_2__einsum").exit_code == 2  # a typed id is not guessed at


@pytest.mark.ex8_2
def test_check_exit_codes_and_json(tmp_path):
    stub = run("check", "8-2", "--format", "json")
    assert stub.exit_code == 1
    data = json.loads(stub.output)
    assert data["score"] == 0.0 and data["max_score"] == 10.0
    assert {p["status"] for p in data["parts"]} == {"not_implemented"}

    solved = run("check", "8-2", "--submission", "solutions", "--format", "json")
    assert solved.exit_code == 0
    assert json.loads(solved.output)["score"] == 10.0


@pytest.mark.ex8_2
def test_text_output_is_plain_without_a_terminal_and_names_the_next_step():
    result = run("check", "8-2", env={"NO_COLOR": "1"})
    assert result.exit_code == 1
    assert "\x1b[" not in result.output
    assert "not implemented yet" in result.output
    assert "Score: 0/10" in result.output
    assert "then run `grader check 8-2` again" in result.output


def test_stubs_check_passes_on_the_shipped_kit():
    result = run("stubs", "--check")
    assert result.exit_code == 0, result.output
    assert "every stub matches its solution" in result.output


def test_show_lists_written_parts_apart():
    result = run("show", "8-3")
    assert result.exit_code == 0
    assert "exercises/answers/8-3.md" in result.output
    assert "for the instructor, not in the automatic score" in result.output


def test_check_without_a_sandbox_still_grades_and_says_so_once(monkeypatch):
    from grader import sandbox

    missing = {**sandbox.status(), "files": False, "landlock_abi": 0, "complete": False}
    monkeypatch.setattr(sandbox, "status", lambda: missing)
    result = CliRunner().invoke(
        main, ["check", "8-1", "8-2", "--submission", "solutions", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.count("NOT sandboxed") == 1, result.stderr
    assert [json.loads(line)["score"] for line in result.stdout.splitlines()] == [
        json.loads(line)["max_score"] for line in result.stdout.splitlines()
    ]


def test_the_file_graded_never_depends_on_the_language(tmp_path, monkeypatch):
    """The kit's exercises/ and exercises/zh/: untouched (the same code in other words), each
    language grades its own; once one is edited, that one is graded in English or in Chinese;
    a file in the current folder comes first."""
    from grader import i18n
    from grader.notebook.edited import graded_form
    from grader.records import get_exercise

    record = get_exercise("8-2")
    kit = tmp_path / "kit"
    (kit / "exercises" / "zh").mkdir(parents=True)
    english, chinese = kit / "exercises" / record.file, kit / "exercises" / "zh" / record.file
    english.write_text('def f():\n    raise NotImplementedError("Exercise 8-2: do it")\n')
    chinese.write_text('def f():\n    raise NotImplementedError("练习 8-2：做吧")\n')
    os.utime(english, (1_000, 1_000))
    os.utime(chinese, (2_000, 2_000))  # checked out a little later: still untouched
    monkeypatch.chdir(tmp_path)

    def graded():
        return graded_form(record.file, kit=kit / "exercises").path

    def chosen():
        found = []
        for language in ("en", "zh"):
            monkeypatch.setattr(i18n, "_language", language)
            found.append(graded())
        return found

    assert chosen() == [english, chinese]
    chinese.write_text("def f():\n    return 1\n")  # the student works in the Chinese one
    os.utime(chinese, (3_000, 3_000))
    assert chosen() == [chinese, chinese]
    (tmp_path / record.file).write_text("# mine\n")
    assert graded() == tmp_path / record.file


def test_the_edited_file_is_graded_whatever_the_file_times(tmp_path, monkeypatch):
    """A fresh clone (GitHub Actions' checkout) writes every file at once, the Chinese stubs
    after the English ones: the file graded is the one whose code differs from the untouched
    stubs', `.py` or notebook, never the one written last."""
    from grader import i18n
    from grader.kit import KIT
    from grader.notebook.edited import graded_form
    from grader.notebook.generate import notebook_text
    from grader.records import get_exercise

    record = get_exercise("8-2")
    stem = Path(record.file).stem
    kit = tmp_path / "kit" / "exercises"
    (kit / "zh").mkdir(parents=True)
    stubs = [Path("exercises"), Path("exercises") / "zh"]
    files = [folder / f"{stem}{suffix}" for folder in stubs for suffix in (".py", ".ipynb")]
    for when, name in enumerate(files):
        copy = kit.parent / name
        copy.write_bytes((KIT / name).read_bytes())
        os.utime(copy, (1_000 + when, 1_000 + when))
    monkeypatch.setattr(i18n, "_language", "en")
    monkeypatch.chdir(tmp_path)
    assert (
        graded_form(record.file, kit=kit).path == kit / record.file
    )  # untouched: the language's own
    mine = (KIT / "examples" / "submissions" / "bob" / record.file).read_text()
    for edited in (kit / record.file, kit / f"{stem}.ipynb"):
        original = edited.read_bytes()
        text = notebook_text(record, mine) if edited.suffix == ".ipynb" else mine
        edited.write_text(text, encoding="utf-8")
        os.utime(edited, (900, 900))  # written before the untouched Chinese stubs
        assert graded_form(record.file, kit=kit).path == edited
        edited.write_bytes(original)


def test_part_runs_the_reference_for_that_part_only(tmp_path, monkeypatch):
    """`grader check 8-2 --part P`: the solution runs on P's cases only (the others' expected
    outputs are never asked for), and the part graded is graded as in a full check."""
    from grader.engine import references
    from grader.grading import grade
    from grader.kit import KIT
    from grader.records import get_exercise

    record = get_exercise("8-2")
    named = record.parts[-1].name
    asked = []
    original = references._run_by_reference

    def run_by_reference(record, cases, parts=None):
        chosen = original(record, cases, parts)
        asked.append(len(chosen))
        return chosen

    monkeypatch.setattr(references, "_run_by_reference", run_by_reference)
    fresh = references.LiveReference(KIT / "solutions")
    monkeypatch.setattr(references.LiveReference, "_memo", {})
    one = grade("8-2", KIT / "solutions", seed=7, parts=[named], reference=fresh)
    cases = fresh.cases(record, 7)
    assert asked and set(asked) == {len(cases[named])}  # that part's cases, and no other's
    assert len(cases[named]) < sum(len(c) for c in cases.values())
    everything = grade("8-2", KIT / "solutions", seed=7, reference=fresh)
    assert [p.name for p in one.parts] == [named]
    assert one.parts[0].to_dict() == everything.part(named).to_dict()
