"""Notebooks: made from the stubs (one source, drift detected) and read back for grading, with
IPython's syntax and hostile files handled without running anything."""

from __future__ import annotations

import ast
import csv
import html
import shutil
import time

import nbformat
import pytest

from grader import check
from grader.instructor.course.stubs import package_dir, sync_stubs
from grader.instructor.course.submissions import find_exercise_file
from grader.notebook.extract import NotebookError, notebook_code, python_of_cell
from grader.notebook.generate import CHECK_TAG, make_notebook, notebook_name, notebook_text
from grader.notebook.live import unsaved_changes
from grader.records import EXERCISES, get_exercise


def _module_without_docstring(source: str) -> str:
    tree = ast.parse(source)
    tree.body = tree.body[1:] if isinstance(tree.body[0], ast.Expr) else tree.body
    return ast.dump(tree)


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_each_notebook_holds_its_stubs_code_the_task_and_a_check_cell(exercise_id):
    record = get_exercise(exercise_id)
    path = package_dir("exercises") / notebook_name(record)
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    stub = (package_dir("exercises") / record.file).read_text(encoding="utf-8")
    # Code cells, read back as the grader reads them, are the stub's code and nothing else.
    assert _module_without_docstring(notebook_code(path.read_bytes(), path.name)) == (
        _module_without_docstring(stub)
    )
    task = notebook.cells[0].source
    assert notebook.cells[0].cell_type == "markdown" and record.title in task
    for part in record.parts:
        assert f"| {part.name} | {part.points:g} |" in task
    last = notebook.cells[-1]
    assert last.cell_type == "code" and CHECK_TAG in last.metadata["tags"]
    assert f'check("{record.id}")' in last.source
    assert "save the notebook" in notebook.cells[-2].source


def test_a_notebook_edited_by_hand_is_reported_as_drift(tmp_path):
    record = get_exercise("8-2")
    assert sync_stubs(exercises=tmp_path, write=True, ids=["8-2"]) == [
        tmp_path / record.file,
        tmp_path / notebook_name(record),
    ]
    assert sync_stubs(exercises=tmp_path, write=False, ids=["8-2"]) == []
    notebook = nbformat.read(tmp_path / notebook_name(record), as_version=4)
    notebook.cells[2].source += "\n# a hand-made change"
    nbformat.write(notebook, tmp_path / notebook_name(record))
    assert sync_stubs(exercises=tmp_path, write=False, ids=["8-2"]) == [
        tmp_path / notebook_name(record)
    ]


def test_the_same_stub_gives_the_same_bytes():
    record = get_exercise("additive")  # nbformat draws random cell ids unless given ones
    stub = (package_dir("exercises") / record.file).read_text(encoding="utf-8")
    assert notebook_text(record, stub) == notebook_text(record, stub)


# --- reading notebooks for grading: IPython syntax and hostile files -----------------------------

SOLUTION = (package_dir("solutions") / "ex8_2.py").read_text(encoding="utf-8")


def solved_notebook(extra_cells=(), outputs=()) -> nbformat.NotebookNode:
    """The 8-2 notebook made from the solution (what a student who got everything right has),
    with `extra_cells` inserted after the imports and `outputs` on the first code cell."""
    notebook = make_notebook(get_exercise("8-2"), SOLUTION)
    for offset, source in enumerate(extra_cells):
        notebook.cells.insert(2 + offset, nbformat.v4.new_code_cell(source))
    first = next(cell for cell in notebook.cells if cell.cell_type == "code")
    first.outputs = list(outputs)
    return notebook


def test_magics_and_shell_escapes_become_pass_and_never_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cell = "\n".join(
        [
            "%matplotlib inline",
            "!touch shell-ran",
            "files = !touch assigned-shell-ran",
            "%system touch magic-ran",
            "len?",
            "if True:",
            "    !touch indented-shell-ran",
            "    x = 7 % 4",
            'doc = """',
            "%this line is text inside a string",
            '"""',
        ]
    )
    python = python_of_cell(cell)
    namespace = {}
    exec(compile(python, "cell", "exec"), namespace)  # the extracted cell is plain Python
    assert list(tmp_path.iterdir()) == []  # nothing reached a shell
    assert namespace["x"] == 3 and "%this line is text" in namespace["doc"]
    assert python_of_cell("%%bash\ntouch cell-magic-ran\n").splitlines() == [
        "# %%bash",
        "# touch cell-magic-ran",
    ]


def test_a_solved_notebook_reads_back_as_the_solution_without_its_check_cell():
    notebook = solved_notebook(["%load_ext autoreload", "!pip install --quiet numpy"])
    notebook.cells.append(nbformat.v4.new_code_cell("import grader\ngrader.check('8-2')"))
    code = notebook_code(nbformat.writes(notebook), "ex8_2.ipynb")
    assert "check(" not in code and "import grader" not in code
    assert "pass  # IPython syntax, not run when graded: !pip install" in code
    defined = {
        n.name for n in ast.parse(code).body if isinstance(n, ast.ClassDef | ast.FunctionDef)
    }
    assert defined == {n.name for n in ast.parse(SOLUTION).body if hasattr(n, "name")}


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b'{"cells": [', "is not valid notebook JSON"),
        (b"[1, 2, 3]", "is JSON but not a notebook"),
        (b"\xff\xfe not text", "is not UTF-8 text"),
        (b"[" * 100_000 + b"]" * 100_000, "is not valid notebook JSON"),
        (b'{"nbformat": 4, "nbformat_minor": 5, "cells": "no"}', "not a notebook Jupyter can open"),
    ],
)
def test_a_file_that_is_not_a_notebook_is_refused_with_what_to_do(content, words):
    with pytest.raises(NotebookError) as refused:
        notebook_code(content, "ex8_2.ipynb")
    assert words in str(refused.value) and "save it again" in str(refused.value)


def test_a_cell_that_does_not_parse_is_named_like_a_syntax_error():
    notebook = solved_notebook(["def broken(:\n    pass"])
    with pytest.raises(NotebookError) as refused:
        notebook_code(nbformat.writes(notebook), "ex8_2.ipynb")
    message = str(refused.value)
    assert "ex8_2.ipynb, code cell 2 (the one that starts `def broken(:`)" in message
    assert "line 1: SyntaxError" in message


def test_huge_outputs_are_not_even_validated():
    flood = nbformat.v4.new_output("stream", name="stdout", text="x" * 30_000_000)
    text = nbformat.writes(solved_notebook(outputs=[flood]))
    start = time.perf_counter()
    code = notebook_code(text, "ex8_2.ipynb")
    assert time.perf_counter() - start < 3.0
    assert "xxxx" not in code and "class ScaledDotScore" in code


def test_batch_finds_a_notebook_and_grades_its_code(tmp_path):
    folder = tmp_path / "student" / "work"
    folder.mkdir(parents=True)
    nbformat.write(solved_notebook(["!rm -rf ~"]), folder / "ex8_2.ipynb")
    found = find_exercise_file(tmp_path / "student", "ex8_2.py")
    assert found.path == folder / "ex8_2.py"
    assert (
        "class BilinearScore" in found.path.read_text()
        and "pass  # IPython" in found.path.read_text()
    )
    # Both a file and a notebook, both edited and different: which one to grade is not guessed.
    found.path.write_text("x = 1\n", encoding="utf-8")
    problem = find_exercise_file(tmp_path / "student", "ex8_2.py").problem
    assert "are edited, and differ: hand in exactly one" in problem


def test_batch_reports_a_broken_notebook_like_a_syntax_error(tmp_path):
    (tmp_path / "ex8_2.ipynb").write_text(
        '{"cells": [{"cell_type": "code", "source": "x = ', "utf-8"
    )
    found = find_exercise_file(tmp_path, "ex8_2.py")
    assert found.path is None and not found.missing
    assert found.problem.startswith("ex8_2.ipynb is not valid notebook JSON")


@pytest.mark.ex8_2
def test_the_demo_class_of_notebooks_is_graded_like_files(tmp_path):
    from grader.instructor.batch import BatchOptions, run_batch

    demo = package_dir("examples") / "submissions"
    for student in ("heidi", "kim", "judy"):
        shutil.copytree(demo / student, tmp_path / "class" / student)
    summary = run_batch(tmp_path / "class", BatchOptions(["8-2"], tmp_path / "out", jobs=2, seed=1))
    rows = {row["student"]: row for row in csv.DictReader((summary.out / "grades.csv").open())}
    # heidi: right, with magics, shell escapes and a check cell; kim: the 1/√d scale forgotten;
    # judy: a notebook saved half-way (not JSON), reported like a syntax error.
    assert {name: float(row["8-2"]) for name, row in rows.items()} == {
        "heidi": 10.0,
        "kim": 7.0,
        "judy": 0.0,
    }
    assert rows["judy"]["flags"] == "unusable-8-2"
    feedback = (summary.out / "feedback" / "judy.md").read_text()
    assert "ex8_2.ipynb is not valid notebook JSON" in feedback
    assert "scale is missing" in (summary.out / "feedback" / "kim.md").read_text()
    # Each student's feedback is also the page `grader check --html` writes, pictures inside.
    kim = (summary.out / "feedback" / "kim.html").read_text()
    assert "Feedback for kim" in kim and "Score: 7/10" in kim
    assert kim.count('src="data:image/png;base64,') >= 1 and "<script" not in kim
    assert "not valid notebook JSON" in (summary.out / "feedback" / "judy.html").read_text()


# --- check() in a notebook: the saved file is graded, stale code is refused ----------------------


def test_code_the_kernel_ran_but_did_not_save_is_named(tmp_path):
    path = tmp_path / "ex8_2.ipynb"
    nbformat.write(solved_notebook(), path)
    saved = next(
        c.source for c in nbformat.read(path, 4).cells if "class ScaledDotScore" in c.source
    )
    # Re-run as saved, with other spacing and a comment: the same code.
    same = saved.replace("    def call", "    # my notes\n\n    def call")
    assert unsaved_changes(path, ["import keras", same, 'check("8-2")']) == ""
    edited = saved.replace("ops.sqrt(", "(")
    message = unsaved_changes(path, [saved, edited, "%timeit 1"])
    assert message.startswith("`ScaledDotScore` as this kernel last ran it differs from the saved")
    assert "Save the notebook" in message
    # The last run counts: running the saved version again clears it.
    assert unsaved_changes(path, [edited, saved]) == ""


def test_check_refuses_to_grade_stale_code_loudly(tmp_path, monkeypatch, capsys):
    from grader.notebook import live

    path = tmp_path / "ex8_2.ipynb"
    nbformat.write(solved_notebook(), path)
    monkeypatch.setattr(live, "kernel_history", lambda: ["def softmax_jacobian(scores):\n    pass"])
    graded = check("8-2", notebook=path)
    assert graded.result is None and "`softmax_jacobian`" in graded.problem
    assert "<b>Not graded.</b>" in graded._repr_html_()
    assert "not graded" in capsys.readouterr().out  # outside Jupyter: printed as text


@pytest.mark.ex8_2
def test_check_grades_the_saved_notebook_with_pictures(tmp_path, capsys):
    path = tmp_path / "ex8_2.ipynb"
    shutil.copyfile(package_dir("examples") / "submissions" / "kim" / "ex8_2.ipynb", path)
    graded = check("8-2", notebook=path)
    assert graded.score == 7.0 and graded.result.part("ScaledDotScore").score == 0
    page = graded._repr_html_()
    assert "the 1/√d scale is missing" in page and "Score: 7/10" in page
    # The page says what the terminal says: every line of the text's problems is on it.
    from grader.report import problem_lines

    _, shown = problem_lines(graded.record, graded.result, width=10_000)
    lines = [line.strip() for part in shown.values() for line in part]
    assert lines and all(html.escape(line) in page for line in lines), lines
    assert "mistake: scale forgotten" not in page  # a key of the records, not words for students
    text = []
    graded._repr_pretty_(type("Printer", (), {"text": lambda self, t: text.append(t)})(), False)
    assert text == [graded.text()] and "the 1/√d scale is missing" in text[0]
    assert page.count('<img src="data:image/png;base64,') == 2  # worst case, and BilinearScore
    assert [p.kind for p in graded.pictures] == ["difference", "at work"]
    printed = capsys.readouterr().out
    assert "Score: 7/10" in printed and str(path) in printed and "<" not in printed


def test_a_chinese_notebook_grades_and_explains_in_chinese(tmp_path, capsys):
    from grader import i18n

    path = tmp_path / "ex8_2.ipynb"
    shutil.copyfile(package_dir("examples") / "submissions" / "kim" / "ex8_2.ipynb", path)
    graded = check("8-2", notebook=path, lang="zh")
    assert graded.score == 7.0
    page = graded._repr_html_()
    assert "得分：7/10" in page and "缺少 1/√d 缩放" in page and "练习 8-2" in page
    printed = capsys.readouterr().out
    assert "得分：7/10" in printed and "Score: " not in printed
    assert i18n.language() == "en"  # the notebook's language stays with its result


def test_every_exercise_has_a_chinese_notebook_that_checks_in_chinese():
    exercises = package_dir("exercises")
    for record in EXERCISES.values():
        notebook = nbformat.read(exercises / "zh" / notebook_name(record), as_version=4)
        assert notebook.cells[0].source.startswith(f"# 练习 {record.id}：")
        assert notebook.cells[-1].source.endswith(f'check("{record.id}", lang="zh")')
        assert "## 检查你的作业" in notebook.cells[-2].source
        english = nbformat.read(exercises / notebook_name(record), as_version=4)
        code = [c.source for c in english.cells if c.cell_type == "code"]
        assert len(code) == sum(c.cell_type == "code" for c in notebook.cells)
