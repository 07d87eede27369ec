"""Exercise notebooks are made from the stubs, which are made from the solutions: one source.

`make_notebook(record, stub)` turns a stub (grader.instructor.course.stubs) into a notebook: a
Markdown cell with the task (the stub's docstring, the parts, their points and what is checked),
one code cell per top-level definition of the stub (the imports and given constants first), and a
last cell that grades. Nothing is written by hand, so `grader stubs --check` can tell a notebook
that drifted from its solution by comparing the text of the file with what would be made now.

nbformat writes the files: it is Jupyter's own reference implementation of the format, it gives
the same bytes for the same notebook (sorted keys, fixed indentation), and the batch needs it
anyway to read the notebooks students hand in. A text round trip (jupytext) would add a second
representation to keep in step, for nothing the stub does not already give.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
from nbformat import v4

from grader.i18n import _, n_, tr
from grader.vocabulary.spec import Exercise

# Metadata that marks the generated cell which grades: extraction drops it (see extract.py).
CHECK_TAG = "attnkit-check"
NOTEBOOK_SUFFIX = ".ipynb"


def notebook_name(record: Exercise) -> str:
    return Path(record.file).stem + NOTEBOOK_SUFFIX


def make_notebook(record: Exercise, stub: str, lang: str = "") -> nbformat.NotebookNode:
    """The notebook of `record` made from the stub's source (or a solution's, for tests), its
    words in the language of grader.i18n; `lang` also goes to its check cell's `check()`."""
    tree = ast.parse(stub)
    # The docstring's first line is the title, which the record already gives.
    docstring = (ast.get_docstring(tree, clean=True) or "").partition("\n")[2].strip()
    lines = stub.splitlines()
    cells = [v4.new_markdown_cell(_task(record, docstring))]
    targets = {target: part for part in record.parts for target in part.targets}
    for chunk, names in _chunks(tree, lines):
        graded = [targets[name] for name in names if name in targets]
        if graded:
            part = graded[0]
            heading = n_(
                "### `{name}`: part *{part}*, {points} point",
                "### `{name}`: part *{part}*, {points} points",
                int(part.points != 1) + 1,
                name=names[0],
                part=part.name,
                points=f"{part.points:g}",
            )
            cells.append(v4.new_markdown_cell(f"{heading}\n\n{tr(part.description)}".rstrip()))
        cells.append(v4.new_code_cell(chunk))
    cells.append(v4.new_markdown_cell(_check_words(record)))
    cells.append(
        v4.new_code_cell(
            f'from grader import check\n\ncheck("{record.id}"'
            + (f', lang="{lang}")' if lang else ")"),
            metadata={"tags": [CHECK_TAG]},
        )
    )
    stem = Path(record.file).stem
    for index, cell in enumerate(cells):
        cell["id"] = f"{stem}-{index}"  # fixed ids: the same notebook gives the same bytes
    notebook = v4.new_notebook(cells=cells)
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "attnkit": {"exercise": record.id, "made_from": f"solutions/{record.file}"},
    }
    return notebook


def notebook_text(record: Exercise, stub: str, lang: str = "") -> str:
    text = nbformat.writes(make_notebook(record, stub, lang))
    return text if text.endswith("\n") else text + "\n"


def sync_notebook(
    record: Exercise, stub: str, exercises: Path, write: bool, lang: str = ""
) -> Path | None:
    """Make `exercises/<stem>.ipynb` from the stub; return it when it was (or would be) changed."""
    target = exercises / notebook_name(record)
    text = notebook_text(record, stub, lang)
    if target.is_file() and target.read_text(encoding="utf-8") == text:
        return None
    if write:
        target.write_text(text, encoding="utf-8")
    return target


def _chunks(tree: ast.Module, lines: list[str]) -> list[tuple[str, list[str]]]:
    """The stub's code after its docstring, cut before each top-level definition (with its
    decorators and the comments just above it); what comes between definitions (imports,
    constants) stays with the definition before it, the imports are a cell of their own."""
    body = list(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        start = body.pop(0).end_lineno
    else:
        start = 0
    cuts = []
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
            while first > start and lines[first - 1].lstrip().startswith("#"):
                first -= 1
            cuts.append((first, node.name))
    chunks, previous, names = [], start, []
    for first, name in cuts:
        if _code(lines[previous:first]):
            chunks.append((_code(lines[previous:first]), names))
            names = []
        previous = first
        names = names + [name]
    tail = _code(lines[previous:])
    if tail:
        chunks.append((tail, names))
    return chunks


def _code(lines: list[str]) -> str:
    text = "\n".join(lines).strip("\n")
    return text if text.strip() else ""


def _task(record: Exercise, docstring: str) -> str:
    rows = "\n".join(
        f"| {part.name} | {part.points:g} | "
        f"{tr(part.description) if part.description else ', '.join(part.targets)} |"
        for part in record.parts
    )
    written = "".join(
        "\n\n"
        + _(
            "Written ({points} points, for the instructor, not in the automatic score): "
            "{prompt} Write it in `answers/{id}.md`.",
            points=f"{part.points:g}",
            prompt=tr(part.prompt),
            id=record.id,
        )
        for part in record.written
    )
    header = _("| part | points | what is checked |")
    return (
        _("# Exercise {id}: {title}", id=record.id, title=tr(record.title))
        + f"\n\n*{tr(record.section)}*\n\n{tr(record.summary)}\n\n"
        f"{docstring}\n\n{header}\n|---|---|---|\n{rows}{written}"
    )


def _check_words(record: Exercise) -> str:
    return _(
        "## Check your work\n\n"
        "Run each cell you filled in, **save the notebook** (Ctrl+S), then run the cell below. "
        "It grades the code of the *saved* notebook, in a separate sandboxed process, "
        "against the reference: outputs and gradients, on several shapes. If a cell you ran "
        "differs from the saved file, it says so instead of grading old code. The first check "
        "takes a few seconds (TensorFlow starts); the next ones reuse the warm helper.\n\n"
        "In a terminal, `grader watch {id} {notebook}` re-grades this "
        "notebook each time you save it (`grader check {id}` grades `{file}`).",
        id=record.id,
        notebook=notebook_name(record),
        file=record.file,
    )
