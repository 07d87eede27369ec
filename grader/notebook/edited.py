"""Which of an exercise's two forms a student edited: its `.py` file or its notebook, lying side
by side (the kit ships both, and a student works in one). `grader check`, `grader watch`, the
notebook's `check()` and `grader batch` all choose with `edited_form`, so that the form the
student worked in is graded and the untouched stub beside it never is.

Edited means: its code differs from the shipped stub's, compared without words (strings,
docstrings and comments blanked, so that a stub in any language and its notebook read the
same). File times are used only to choose between two edited forms, and said.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from grader.kit import KIT


def code_shape(path: Path) -> str | None:
    """A file's code without its words (strings and docstrings blanked, comments gone), the
    same for a stub in any language and for its notebook; None when it does not parse."""
    try:
        data = path.read_bytes()
        if path.suffix == ".ipynb":
            from grader.notebook.extract import notebook_code

            data = notebook_code(data, path.name)
        tree = ast.parse(data)
    except (OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):  # docstrings: the notebook has the module's as markdown
            node.body = [
                statement
                for statement in body
                if not (
                    isinstance(statement, ast.Expr)
                    and isinstance(statement.value, ast.Constant)
                    and isinstance(statement.value.value, str)
                )
            ] or [ast.Pass()]
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    return ast.dump(tree)


def kit_forms(filename: str, folder: Path | None = None) -> list[Path]:
    """The kit's shipped forms of an exercise: its `.py` file and notebook, in exercises/ and
    exercises/zh/ (of `folder`, the kit's exercises/ by default), those present."""
    notebook = Path(filename).with_suffix(".ipynb").name
    folder = folder or KIT / "exercises"
    return [
        place / name
        for place in (folder, folder / "zh")
        for name in (filename, notebook)
        if (place / name).is_file()
    ]


def stub_shape(filename: str, folder: Path | None = None) -> str | None:
    """The code shape of the stub the kit ships for this exercise: the one most of its forms
    share (a student edits one of them, perhaps in the kit itself), or None where no shape is
    shared by most (or the kit has no exercises/)."""
    from collections import Counter

    counted = Counter(
        shape for shape in map(code_shape, kit_forms(filename, folder)) if shape is not None
    ).most_common(2)
    if not counted or counted[0][1] < 2 or (len(counted) > 1 and counted[1][1] == counted[0][1]):
        return None
    return counted[0][0]


@dataclass(frozen=True)
class Chosen:
    """The form to grade, and the other form when it was edited too (then `by_time` says the
    newer was chosen), for the student to be told how to grade it."""

    path: Path
    other_edited: Path | None = None
    # Neither form was edited: `path` is the `.py` file, which grades the same as the notebook.
    untouched: bool = False


def edited_form(python: Path, notebook: Path, filename: str, kit: Path | None = None) -> Chosen:
    """Of an exercise's `.py` file and notebook, both present: the one edited; both edited, the
    newer (by file time); neither, the `.py` file (it grades the same). `kit`: the kit's
    exercises/ whose stubs they are compared with (by default this grader's)."""
    stub = stub_shape(filename, kit)
    shapes = {python: code_shape(python), notebook: code_shape(notebook)}
    if stub is None:  # nothing to compare with: the two differ, or both are the stub
        edited = [p for p in shapes if shapes[python] != shapes[notebook]]
    else:
        edited = [p for p, shape in shapes.items() if shape != stub]
    if not edited:
        return Chosen(python, untouched=True)
    if len(edited) == 1 or shapes[python] == shapes[notebook]:  # both edited alike: the same
        return Chosen(edited[0])
    newer, older = sorted(edited, key=lambda p: p.stat().st_mtime_ns, reverse=True)
    return Chosen(newer, other_edited=older)


def graded_form(filename: str, here: Path | None = None, kit: Path | None = None) -> Chosen:
    """The file `grader check` and `grader watch` grade when none is named, whatever the
    language and however the files were written: in the current folder (`here`), its `.py`
    file or notebook, the one edited where both lie there (a student in the kit's exercises/,
    where Jupyter runs); else, of the kit's exercise files (`exercises/` and `exercises/zh/`,
    each as a `.py` file and as a notebook), the one edited.

    The untouched stubs share one code (in other words), so the edited file is the one whose
    code differs from the code most of them share, found without file times: a fresh clone
    (GitHub Actions' checkout) writes every file at once, in no telling order. None edited:
    the language's own `.py` file, which grades the same. Several edited: the last edited.
    `kit`: the kit's exercises/ (by default this grader's)."""
    from grader.i18n import stubs_folder

    here = Path.cwd() if here is None else here
    notebook = Path(filename).with_suffix(".ipynb").name
    python_here, notebook_here = here / filename, here / notebook
    kit = KIT / "exercises" if kit is None else kit
    own = stubs_folder(kit) / filename
    in_kit = here.resolve() in (kit.resolve(), (kit / "zh").resolve())
    if python_here.is_file() and notebook_here.is_file() and not in_kit:
        return edited_form(python_here, notebook_here, filename, kit)
    if python_here.is_file() != notebook_here.is_file():
        return Chosen(python_here if python_here.is_file() else notebook_here)
    found = kit_forms(filename, kit)
    if not found:
        return Chosen(own)
    stub = stub_shape(filename, kit)
    if stub is not None:
        edited = [path for path in found if code_shape(path) != stub]
    else:  # no code most files share (two files that differ): times must say
        shapes = {code_shape(path) for path in found}
        edited = found if len(found) > 1 and len(shapes) > 1 else []
    if not edited:
        return Chosen(own if own.is_file() else found[0])
    edited.sort(key=lambda path: path.stat().st_mtime_ns, reverse=True)
    return Chosen(edited[0], edited[1] if len(edited) > 1 else None)
