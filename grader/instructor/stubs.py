"""Exercise stubs are made from the solutions, never written by hand.

In a solution file, the code between `# BEGIN SOLUTION: <hint>` and `# END SOLUTION` is the
answer. The stub keeps everything else (imports, signatures, docstrings, given code) and puts
`raise NotImplementedError("Exercise <id>: <hint>")` in place of each answer.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from grader import KIT
from grader.records import EXERCISES

BEGIN = re.compile(r"^(?P<indent>\s*)# BEGIN SOLUTION(?::\s*(?P<hint>.*\S))?\s*$")
END = re.compile(r"^\s*# END SOLUTION\s*$")


class MarkerError(ValueError):
    pass


class NoSolutions(MarkerError):
    """`grader stubs` where there is no solutions/ folder (a student kit)."""


def make_stub(source: str, exercise_id: str, filename: str = "<solution>") -> str:
    lines, inside = [], None
    for number, line in enumerate(source.splitlines(keepends=True), start=1):
        begin, end = BEGIN.match(line), END.match(line)
        if begin:
            if inside is not None:
                raise MarkerError(
                    f"{filename}:{number}: BEGIN SOLUTION inside another (opened on line {inside})"
                )
            inside = number
            hint = begin["hint"] or "write this part"
            message = f"Exercise {exercise_id}: {hint}".replace("\\", "\\\\").replace('"', '\\"')
            lines.append(f'{begin["indent"]}raise NotImplementedError("{message}")\n')
        elif end:
            if inside is None:
                raise MarkerError(f"{filename}:{number}: END SOLUTION without BEGIN SOLUTION")
            inside = None
        elif inside is None:
            lines.append(line)
    if inside is not None:
        raise MarkerError(f"{filename}:{inside}: BEGIN SOLUTION is never closed")
    return "".join(lines)


def package_dir(name: str) -> Path:
    return KIT / name


def sync_stubs(
    solutions: Path | None = None,
    exercises: Path | None = None,
    write: bool = True,
    ids: list[str] | None = None,
) -> list[Path]:
    """Make every stub from its solution, and its notebook from the stub; return the stubs and
    notebooks that were (or would be) changed."""
    from grader.notebook.generate import sync_notebook

    solutions = solutions or package_dir("solutions")
    exercises = exercises or package_dir("exercises")
    if not solutions.is_dir():
        raise NoSolutions(
            f"`grader stubs` makes the exercise files from the solutions, and {solutions} does "
            "not exist: this is a student kit, whose exercise files are already made. Edit "
            "them, then run `grader check ID`."
        )
    changed = []
    for record in EXERCISES.values():
        if ids and record.id not in ids:
            continue
        source = solutions / record.file
        stub = make_stub(source.read_text(encoding="utf-8"), record.id, str(source))
        target = exercises / record.file
        if not target.is_file() or target.read_text(encoding="utf-8") != stub:
            changed.append(target)
            if write:
                target.write_text(stub, encoding="utf-8")
        notebook = sync_notebook(record, stub, exercises, write)
        if notebook is not None:
            changed.append(notebook)
    return changed


# Chinese stubs (issue 18): the same code, their texts from the catalog.
TRANSLATED = {"zh": "练习 {id}：{hint}"}


def make_translated_stub(source: str, exercise_id: str, language: str = "zh") -> str:
    """The stub of `source` for students of `language`: the code of `make_stub`, with the
    module docstring (the task) and the hints of the NotImplementedError messages from the
    catalog (a text it lacks stays English; the catalog test fails then)."""
    from grader.i18n import translator

    translate = translator(language)
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant):
        docstring = ast.get_docstring(tree, clean=False)
        text = translate(docstring).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
        ending = lines[first.end_lineno - 1][first.end_col_offset :]
        lines[first.lineno - 1 : first.end_lineno] = [f'"""{text}"""{ending}']
    translated = []
    for line in lines:
        begin = BEGIN.match(line)
        if begin and begin["hint"]:
            line = f"{begin['indent']}# BEGIN SOLUTION: {translate(begin['hint'])}\n"
        translated.append(line)
    stub = make_stub("".join(translated), exercise_id)
    prefix = f'raise NotImplementedError("Exercise {exercise_id}: '
    wording = TRANSLATED[language].format(id=exercise_id, hint="")
    return stub.replace(prefix, f'raise NotImplementedError("{wording}')


def sync_translated_stubs(
    solutions: Path | None = None,
    exercises: Path | None = None,
    write: bool = True,
    ids: list[str] | None = None,
) -> list[Path]:
    """Make exercises/<language>/ (exercises/zh/) from the solutions, as `sync_stubs` makes
    exercises/, stubs and notebooks; return those that were (or would be) changed."""
    from grader.i18n import speaking
    from grader.notebook.generate import sync_notebook

    solutions = solutions or package_dir("solutions")
    exercises = exercises or package_dir("exercises")
    changed = []
    for language in TRANSLATED:
        for record in EXERCISES.values():
            if ids and record.id not in ids:
                continue
            source = (solutions / record.file).read_text(encoding="utf-8")
            stub = make_translated_stub(source, record.id, language)
            target = exercises / language / record.file
            if not target.is_file() or target.read_text(encoding="utf-8") != stub:
                changed.append(target)
                if write:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(stub, encoding="utf-8")
            # The notebook of the translated stub, its words and its check() in that language.
            with speaking(language):
                notebook = sync_notebook(record, stub, target.parent, write, lang=language)
            if notebook is not None:
                changed.append(notebook)
    return changed
