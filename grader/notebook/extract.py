"""The Python code of a notebook, for grading: code cells only, and nothing that is not Python.

A notebook (`.ipynb`) is JSON that anyone can write by hand, so nothing in it is trusted: it is
parsed (json, then nbformat, Jupyter's reference reader) but never executed here; outputs and
Markdown are dropped before nbformat even looks at them (a huge output costs one JSON parse); and
IPython's own syntax is turned into `pass`, never run: cell magics (`%%bash`: the whole cell),
line magics (`%timeit`), shell escapes (`!pip install`, `files = !ls`) and help (`len?`). The
cell that calls `check()` (and its `from grader import check`) is left out, so grading a notebook
never grades it again. What remains is one module, each cell under a `# %% code cell N` line.
A notebook or cell that does not parse is a `NotebookError` whose message names the cell and
line, like a syntax error in a `.py` file.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
import warnings
from dataclasses import dataclass

import nbformat

from grader.i18n import N_, _, tr
from grader.notebook.generate import CHECK_TAG

# `%%bash`, `%%timeit`...: the rest of the cell is not Python.
_CELL_MAGIC = re.compile(r"^\s*%%")
# `%magic`, `!shell`, `x = !ls`, `x = %env`: IPython syntax on one line.
_LINE_ESCAPE = re.compile(r"^(?P<indent>[ \t]*)(?:[\w.\[\], ]+?\s*=\s*)?[!%]")
# `len?`, `?len`, `np.mean??`: help.
_HELP = re.compile(r"^(?P<indent>[ \t]*)(?:\?\??[\w.]+|[\w.]+\?\??)\s*$")
NOT_RUN = "pass  # IPython syntax, not run when graded: "


class NotebookError(ValueError):
    """The notebook cannot be read as one, or one of its cells is not Python."""


@dataclass(frozen=True)
class CodeCell:
    number: int  # 1-based among the notebook's code cells, as a student counts them
    source: str
    tags: tuple[str, ...] = ()


def code_cells(data: bytes | str, name: str) -> list[CodeCell]:
    """The code cells of a notebook file's contents; NotebookError if it is not a notebook."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise NotebookError(
                _("{name} is not UTF-8 text: {resave}", name=name, resave=tr(_RESAVE))
            ) from None
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise NotebookError(
            _(
                "{name} is not valid notebook JSON ({error}): {resave}",
                name=name,
                error=_short(error),
                resave=tr(_RESAVE),
            )
        ) from None
    if not isinstance(document, dict):
        raise NotebookError(
            _("{name} is JSON but not a notebook: {resave}", name=name, resave=tr(_RESAVE))
        )
    if document.get("nbformat") == 4 and isinstance(document.get("cells"), list):
        document["cells"] = [_without_outputs(c) for c in document["cells"] if _is_code(c)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            notebook = nbformat.reads(
                json.dumps(document), as_version=4, capture_validation_error={}
            )
    except Exception as error:  # noqa: BLE001 - whatever a malformed file makes nbformat raise
        raise NotebookError(
            _(
                "{name} is not a notebook Jupyter can open ({error}): {resave}",
                name=name,
                error=_short(error),
                resave=tr(_RESAVE),
            )
        ) from None
    cells, number = [], 0
    for cell in notebook.get("cells", []) if isinstance(notebook, dict) else []:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        number += 1
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(
                _(
                    "{name}, code cell {number}: its source is not text: {resave}",
                    name=name,
                    number=number,
                    resave=tr(_RESAVE),
                )
            )
        tags = (cell.get("metadata") or {}).get("tags") or ()
        tags = tuple(tag for tag in tags if isinstance(tag, str)) if isinstance(tags, list) else ()
        cells.append(CodeCell(number, source, tags))
    return cells


def notebook_code(data: bytes | str, name: str) -> str:
    """The notebook's code as one Python module to grade (see the module's docstring)."""
    parts = []
    for cell in code_cells(data, name):
        if CHECK_TAG in cell.tags:
            continue
        python = python_of_cell(cell.source)
        try:
            tree = ast.parse(python)
        except SyntaxError as error:
            first = next((line.strip() for line in cell.source.splitlines() if line.strip()), "")
            raise NotebookError(
                _(
                    "{name}, code cell {number} (the one that starts `{first}`), line {line}: "
                    "SyntaxError: {error} — fix it, save, and check again",
                    name=name,
                    number=cell.number,
                    first=first[:40],
                    line=error.lineno,
                    error=error.msg,
                )
            ) from None
        except ValueError as error:  # a NUL byte in the source
            raise NotebookError(
                _(
                    "{name}, code cell {number}: {error}",
                    name=name,
                    number=cell.number,
                    error=error,
                )
            ) from None
        python = _without_grading(python, tree)
        if python.strip():
            parts.append(f"# %% code cell {cell.number}\n{python.rstrip()}\n")
    return "\n\n".join(parts)


def python_of_cell(source: str) -> str:
    """The cell with IPython's own syntax made `pass` (indentation kept, so a block stays one)."""
    if _is_python(source):  # plain Python (the usual cell): kept exactly as written
        return source
    lines = source.splitlines()
    if lines and _CELL_MAGIC.match(next((line for line in lines if line.strip()), "")):
        return "\n".join("# " + line for line in lines)
    changed = list(lines)
    for index, line in enumerate(lines):
        found = _LINE_ESCAPE.match(line) or _HELP.match(line)
        if found and not _is_python(line):
            changed[index] = found["indent"] + NOT_RUN + line.strip()[:60].replace("\\", "/")
    for index in _inside_strings(changed):  # a `%` line of a docstring is text, not a magic
        changed[index] = lines[index]
    return "\n".join(changed)


def _is_python(text: str) -> bool:
    """Whether `text` parses as Python: `x = 5 % 3` does, `%timeit f()` does not."""
    try:
        ast.parse(text.strip())
    except (SyntaxError, ValueError):
        return False
    return True


def _inside_strings(lines: list[str]) -> set[int]:
    """Indices of the lines that lie inside a multi-line string (after its first line)."""
    inside = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                inside.update(range(token.start[0], token.end[0]))  # 0-based: lines 2..end
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return inside


def _without_grading(python: str, tree: ast.Module) -> str:
    """`python` without the top-level `from grader import check`, `import grader` and `check(...)`
    statements: the check cell a student copied or kept, which must not grade itself again."""
    lines = python.splitlines()
    for node in tree.body:
        if _is_grading(node):
            for index in range(node.lineno - 1, node.end_lineno):
                lines[index] = ""
    return "\n".join(lines)


def _is_grading(node: ast.stmt) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.module == "grader" and all(alias.name == "check" for alias in node.names)
    if isinstance(node, ast.Import):
        return all(alias.name == "grader" and alias.asname is None for alias in node.names)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        function = node.value.func
        return (isinstance(function, ast.Name) and function.id == "check") or (
            isinstance(function, ast.Attribute)
            and function.attr == "check"
            and isinstance(function.value, ast.Name)
            and function.value.id == "grader"
        )
    return False


def _is_code(cell) -> bool:
    return isinstance(cell, dict) and cell.get("cell_type") == "code"


def _without_outputs(cell: dict) -> dict:
    return {**cell, "outputs": [], "execution_count": None}


def _short(error: BaseException) -> str:
    return str(error).splitlines()[0][:160] if str(error) else type(error).__name__


_RESAVE = N_("open it in Jupyter and save it again, or hand in the .py file instead")
