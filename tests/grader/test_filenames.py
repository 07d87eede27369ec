"""grader.engine.filenames: a file handed in under a near name or saved as UTF-16 is recognised,
and `grader check` says what to do about it (grader.grading.unloadable)."""

import pytest

from grader.engine.filenames import as_utf8, name_key, near_names, not_utf8
from grader.grading import unloadable
from grader.instructor.course.submissions import find_exercise_file

SOURCE = "def f():\n    return '注意力'\n"


@pytest.mark.parametrize(
    "name,near",
    [
        ("Ex8_2.py", True),
        ("ex8-2.py", True),
        ("EX8-2.PY", True),
        ("ex8_2 (1).py", True),
        ("ex8_2(2).py", True),
        ("ex8_2 copy.py", True),
        ("ex8_2 Copy 2.py", True),
        ("ex8 2.py", True),
        ("Ex8_2 (1).ipynb", True),
        ("ex8_2_old.py", False),
        ("ex8_21.py", False),
        ("ex8_2.py.txt", False),
        ("lab_ex8_2.py", False),
        ("ex8_3.py", False),
        ("ex8_2 (1).txt", False),
    ],
)
def test_a_near_name_is_the_exercise_file_up_to_case_separators_and_copy_marks(name, near):
    assert (name_key(name) in {"ex8_2.py", "ex8_2.ipynb"}) is near


def test_near_names_lists_near_files_only_outside_ignored_folders(tmp_path):
    for name in ("ex8_2.py", "Ex8-2 (1).py", "notes.txt", "ex8_3.py"):
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / "__MACOSX").mkdir()
    (tmp_path / "__MACOSX" / "Ex8_2.py").write_text("junk")
    (tmp_path / "week8").mkdir()
    (tmp_path / "week8" / "ex8_2 copy.py").write_text("x = 1\n")
    found = near_names(tmp_path, "ex8_2.py", {"__MACOSX"})
    assert [p.relative_to(tmp_path).as_posix() for p in found] == [
        "Ex8-2 (1).py",
        "week8/ex8_2 copy.py",
    ]
    here = near_names(tmp_path, "ex8_2.py", {"__MACOSX"}, anywhere=False)
    assert [p.name for p in here] == ["Ex8-2 (1).py"]


@pytest.mark.parametrize(
    "data,kind",
    [
        (SOURCE.encode("utf-8"), ""),
        (b"\xef\xbb\xbf" + SOURCE.encode("utf-8"), ""),  # UTF-8 with a BOM: Python reads it
        (SOURCE.encode("utf-16"), "UTF-16"),
        (SOURCE.encode("utf-16-le"), "UTF-16"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
    ],
)
def test_source_python_cannot_read_is_told_apart(data, kind):
    assert not_utf8(data) == kind


def test_utf16_with_its_mark_is_read_back_as_the_same_text():
    assert as_utf8(SOURCE.encode("utf-16")).decode("utf-8") == SOURCE
    assert as_utf8(SOURCE.encode("utf-8")) is None


def test_check_names_the_near_file_and_the_encoding(tmp_path):
    (tmp_path / "Ex8_2 (1).py").write_text(SOURCE)
    message = unloadable(tmp_path / "ex8_2.py")
    assert "found Ex8_2 (1).py" in message and "rename the file to grade to ex8_2.py" in message
    (tmp_path / "ex8_2.py").write_bytes(SOURCE.encode("utf-16"))
    assert "saved as UTF-16" in unloadable(tmp_path / "ex8_2.py")
    (tmp_path / "ex8_2.py").write_bytes(b"\x00\x01binary")
    assert "not a text file" in unloadable(tmp_path / "ex8_2.py")


def test_a_syntax_error_without_a_line_does_not_say_line_none(tmp_path, monkeypatch):
    import ast

    def no_line(*args, **kwargs):
        raise SyntaxError("something odd")

    (tmp_path / "ex8_2.py").write_text(SOURCE)
    monkeypatch.setattr(ast, "parse", no_line)
    message = unloadable(tmp_path / "ex8_2.py")
    assert "SyntaxError: something odd" in message and "None" not in message


def test_the_batch_grades_a_lone_near_file_or_a_utf16_one_as_the_exercise_file(tmp_path):
    (tmp_path / "hw").mkdir()
    (tmp_path / "hw" / "ex8-2 (1).py").write_bytes(SOURCE.encode("utf-16"))
    found = find_exercise_file(tmp_path, "ex8_2.py")
    assert found.path == tmp_path / "hw" / "ex8_2.py" and found.renamed_from == "hw/ex8-2 (1).py"
    assert found.path.read_text("utf-8") == SOURCE
    assert (tmp_path / "hw" / "ex8-2 (1).py").exists()  # the handed-in file stays as it was


def test_an_exact_name_wins_over_near_ones(tmp_path):
    (tmp_path / "ex8_2.py").write_text(SOURCE)
    (tmp_path / "Ex8_2.py").write_text("x = 1\n")
    found = find_exercise_file(tmp_path, "ex8_2.py")
    assert found.path == tmp_path / "ex8_2.py" and not found.renamed_from
