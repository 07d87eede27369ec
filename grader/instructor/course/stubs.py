"""Exercise stubs are made from the solutions, never written by hand.

In a solution file, the code between `# BEGIN SOLUTION: <hint>` and `# END SOLUTION` is the
answer. The stub keeps everything else (imports, signatures, docstrings, given code) and puts
`raise NotImplementedError("Exercise <id>: <hint>")` in place of each answer.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from grader.i18n import display_width
from grader.kit import KIT
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
# Comments are re-wrapped to the kit's line length (the stubs are not checked for it).
LINE_LENGTH = 100
# A full-line comment made of these only (a rule, an empty `#`) is layout, not words.
RULE_CHARACTERS = set("-=#*~ ")
HEADING = re.compile(r"^(?P<lead>-{2,}) (?P<title>.*\S) (?P<trail>-{2,})$")
# Comments that are instructions to tools, not to students.
PRAGMAS = ("noqa", "type:", "fmt:", "pragma", "ruff:", "isort:")
# Characters wide on a terminal, and the punctuation that must not end or begin a line.
WIDE = r"\u2e80-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef"
OPENING, CLOSING = "（「『《", "，。；：、！？）」』》"
WRAP_UNIT = re.compile(rf"\s+|[{OPENING}]*(?:[{WIDE}]|[^\s{WIDE}]+)[{CLOSING}]*")


@dataclass(frozen=True)
class StubText:
    """A text of a stub a student reads, other than the task and the hints: a class, function
    or method docstring, or a block of full-line comments (one sentence may run over several
    lines). `first`/`end` are the 0-based line range it takes; `render` gives the lines that
    replace them for a translation."""

    first: int
    end: int
    text: str
    render: Callable[[str], list[str]]


def stub_texts(stub: str) -> list[StubText]:
    """The docstrings and comment blocks of a stub, in the order of the file. The catalog
    extracts them from the stubs (`make_stub` has already dropped the comments of the answers),
    and `make_translated_stub` looks them up by the same `text`."""
    lines = stub.splitlines(keepends=True)
    found = [*_docstrings(ast.parse(stub), lines), *_comment_blocks(stub, lines)]
    return sorted(found, key=lambda text: text.first)


def _docstrings(tree: ast.Module, lines: list[str]) -> list[StubText]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        docstring = ast.get_docstring(node, clean=True)
        expression = node.body[0]
        if not docstring or lines[expression.lineno - 1][: expression.col_offset].strip():
            continue  # no docstring, or one on the line of the `def` (left as it is)
        indent = " " * expression.col_offset
        # ast's columns count UTF-8 bytes.
        last = lines[expression.end_lineno - 1].encode("utf-8")
        ending = last[expression.end_col_offset :].decode("utf-8")
        found.append(
            StubText(
                expression.lineno - 1,
                expression.end_lineno,
                docstring,
                partial(_render_docstring, indent=indent, ending=ending),
            )
        )
    return found


def _render_docstring(text: str, indent: str, ending: str) -> list[str]:
    """A docstring as PEP 257 lays it out: the first line after the quotes, the next ones at the
    indentation of the quotes, the closing quotes on a line of their own when there are several."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if text.endswith('"'):
        text = text[:-1] + '\\"'
    first, *rest = text.split("\n")
    body = [first] + [indent + line if line.strip() else "" for line in rest]
    if rest:
        body.append(indent)
    rendered = "\n".join(body)
    return f'{indent}"""{rendered}"""{ending}'.splitlines(keepends=True)


def _comment_blocks(stub: str, lines: list[str]) -> list[StubText]:
    """Full-line comments: consecutive ones at the same indentation are one text (their lines
    joined by spaces), a rule (`# ----`) or an empty `#` ends a block and stays as it is, and a
    heading (`# --- title ---`) is its title alone."""
    comments = []  # (line index, column, words)
    for token in tokenize.generate_tokens(io.StringIO(stub).readline):
        if token.type != tokenize.COMMENT or token.line[: token.start[1]].strip():
            continue  # not a comment, or one after code
        comments.append((token.start[0] - 1, token.start[1], token.string[1:].strip()))
    found, block = [], []
    for index, column, words in comments:
        heading = HEADING.match(words)
        if heading:
            found.append(
                StubText(
                    index,
                    index + 1,
                    heading["title"],
                    partial(_render_heading, line=lines[index], column=column, match=heading),
                )
            )
            continue
        if not words or set(words) <= RULE_CHARACTERS or words.startswith(PRAGMAS):
            continue
        if block and block[-1][0] == index - 1 and block[-1][1] == column:
            block.append((index, column, words))
            continue
        if block:
            found.append(_comment_block(block))
        block = [(index, column, words)]
    # A rule, an empty `#` or a heading between two comments ends a block: they are not on
    # consecutive lines then.
    return [*found, _comment_block(block)] if block else found


def _comment_block(block) -> StubText:
    column = block[0][1]
    return StubText(
        block[0][0],
        block[-1][0] + 1,
        " ".join(words for _index, _column, words in block),
        partial(_render_comment, indent=" " * column),
    )


def _render_comment(text: str, indent: str) -> list[str]:
    width = LINE_LENGTH - len(indent) - 2
    return [f"{indent}# {line}\n" for line in wrap(text, width)]


def _render_heading(title: str, line: str, column: int, match: re.Match) -> list[str]:
    head = f"{' ' * column}# {match['lead']} {' '.join(title.split())} "
    trail = max(len(match["trail"]), display_width(line.rstrip("\n")) - display_width(head))
    return [head + "-" * trail + "\n"]


def wrap(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` terminal columns, broken at spaces and between wide
    (Chinese) characters, never before a closing punctuation mark."""
    lines, current = [], ""
    for unit in WRAP_UNIT.findall(text):
        if unit.isspace():
            current += " " if current else ""
        elif current.strip() and display_width(current + unit) > width:
            lines.append(current.rstrip())
            current = unit
        else:
            current += unit
    if current.strip():
        lines.append(current.rstrip())
    return lines


def make_translated_stub(source: str, exercise_id: str, language: str = "zh") -> str:
    """The stub of `source` for students of `language`: the code of `make_stub`, with the
    module docstring (the task), the hints of the NotImplementedError messages, and every
    docstring and comment of the stub (`stub_texts`) from the catalog (a text it lacks stays
    English; the catalog test fails then)."""
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
    stub = translate_stub_texts(make_stub("".join(translated), exercise_id), translate)
    prefix = f'raise NotImplementedError("Exercise {exercise_id}: '
    wording = TRANSLATED[language].format(id=exercise_id, hint="")
    return stub.replace(prefix, f'raise NotImplementedError("{wording}')


def translate_stub_texts(stub: str, translate: Callable[[str], str]) -> str:
    """`stub` with each of its `stub_texts` translated; the lines of a text without a
    translation stay as they are."""
    lines = stub.splitlines(keepends=True)
    for found in reversed(stub_texts(stub)):
        translation = translate(found.text)
        if translation != found.text:
            lines[found.first : found.end] = found.render(translation)
    return "".join(lines)


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
