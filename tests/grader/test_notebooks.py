"""Notebooks: made from the stubs (one source, drift detected) and read back for grading, with
IPython's syntax and hostile files handled without running anything."""

from __future__ import annotations

import ast

import nbformat
import pytest

from grader.instructor.stubs import package_dir, sync_stubs
from grader.notebook.extract import notebook_code
from grader.notebook.generate import CHECK_TAG, notebook_name, notebook_text
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
