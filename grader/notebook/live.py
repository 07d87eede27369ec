"""`check("8-2")` in a notebook: grade the exercise's code as the student wrote it there.

What is graded is the SAVED notebook file (ex8_2.ipynb), read as the batch reads it
(grader.notebook.extract), in the same sandboxed child as `grader check`. The kernel's code is
never graded, because only the file is what a student hands in. Grading a file that differs from
what the student just ran would be grading stale code, so before grading, every definition the
kernel has run (IPython keeps each executed cell in `In`) is compared with the same definition in
the saved file; if one differs, nothing is graded and the result says which, and to save (or to
run the cell again). Outside IPython there is no kernel to compare: the saved file is graded.

The helper that imports TensorFlow (grader.sandbox.processes) lives as long as the kernel, and the
reference's answers are kept, so a check after the first takes about a second.
"""

from __future__ import annotations

import ast
import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from grader import i18n
from grader.engine import safe_files
from grader.i18n import _, n_
from grader.kit import KIT
from grader.notebook.edited import edited_form
from grader.notebook.extract import NotebookError, notebook_code, python_of_cell
from grader.notebook.generate import notebook_name
from grader.records import get_exercise
from grader.vocabulary.spec import Exercise


@dataclass
class Graded:
    """One grading of a file or notebook: the result and its pictures, or why nothing was
    graded (`problem`)."""

    record: Exercise
    path: Path
    result: object = None  # grader.engine.results.ExerciseResult
    pictures: list = field(default_factory=list)
    problem: str = ""
    note: str = ""
    # The language the result was graded in, and is shown in (grader.i18n); "" as chosen.
    language: str = ""

    @property
    def score(self) -> float:
        return self.result.score if self.result is not None else 0.0

    @property
    def passed(self) -> bool:
        return self.result is not None and self.result.passed

    def text(self) -> str:
        with _speaking(self.language):
            return self._text()

    def _text(self) -> str:
        if self.result is None:
            return _("Exercise {id}: not graded.", id=self.record.id) + f"\n{self.problem}"
        from grader.report import render

        self.result.submission = str(self.path)
        return render(self.record, self.result, color=False)

    def html(self) -> str:
        with _speaking(self.language):
            return self._html()

    def _html(self) -> str:
        from grader.notebook.html import problem_html, result_html

        if self.result is None:
            return problem_html(self.record, self.problem)
        return result_html(self.record, self.result, self.pictures, self.note)

    # Jupyter shows the HTML; a terminal or REPL the text.
    def _repr_html_(self) -> str:
        return self.html()

    def __str__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle) -> None:
        """IPython's text view (a console, a notebook shown as text): the whole result, as
        the terminal prints it, never only the score."""
        printer.text(self.text())

    def __repr__(self) -> str:
        state = f"{self.score:g}/{self.record.max_score:g}" if self.result else "not graded"
        return f"<check {self.record.id}: {state}>"


def _speaking(language: str):
    return i18n.speaking(language) if language else contextlib.nullcontext()


def check(
    exercise_id: str,
    notebook: str | os.PathLike | None = None,
    *,
    seed: int = 0,
    lang: str | None = None,
):
    """Grade exercise `exercise_id` as it stands in its saved notebook (see the module's words).

    `notebook`: the .ipynb to grade; by default `<stem>.ipynb` of the exercise in the current
    folder, else the one in the kit's exercises/. In Jupyter the result shows as HTML with
    pictures; elsewhere it is printed as text (and returned). `lang` ("en", "zh"): the language
    of the result (the Chinese notebooks pass "zh"); by default as `grader --lang` would choose.
    """
    language = i18n.parse(lang, "check(lang=...)") if lang else ""
    with _speaking(language):
        graded = _check(exercise_id, notebook, seed)
    graded.language = language
    if not in_jupyter():
        print(graded.text())
    return graded


def _check(exercise_id, notebook, seed):
    from grader.sandbox.processes import warm_up

    warm_up()
    record = get_exercise(exercise_id)
    path = find_notebook(record, notebook)
    if not path.is_file():
        where = _(
            "pass the notebook to grade: check({id!r}, notebook='path/to/{name}')",
            id=record.id,
            name=path.name,
        )
        problem = _("{path} not found: {where}", path=path, where=where)
        graded = Graded(record, path, problem=problem)
    else:
        stale = unsaved_changes(path, kernel_history()) if path.suffix == ".ipynb" else ""
        graded = Graded(record, path, problem=stale) if stale else grade_path(record, path, seed)
    return graded


def grade_path(
    record: Exercise,
    path: Path,
    seed: int = 0,
    timeout: float | None = None,
    pictures: bool = True,
):
    """Grade a `.py` file or an `.ipynb` notebook (with pictures, unless told not to), in the
    sandbox where this machine has one (the student's own code, run with their own rights where
    it has none)."""
    from grader import sandbox
    from grader.engine.judging import cannot_load
    from grader.engine.results import ExerciseResult
    from grader.grading import grade
    from grader.pictures import PictureCollector, available

    protections = sandbox.status()
    policy = {} if protections["complete"] else None
    note = (
        ""
        if policy is not None
        else _("{protections}; your code ran as you.", protections=sandbox.describe(protections))
    )
    if pictures and not available():
        note += " " + _("Pictures need matplotlib: pip install 'attnkit[viz]'.")
    collector = PictureCollector() if pictures else None
    with tempfile.TemporaryDirectory(prefix="attnkit-check-") as scratch:
        # Read as the batch reads it (grader.engine.safe_files): never through a link, never
        # a FIFO; written as a new file in this folder of the grader's own.
        try:
            data = safe_files.read_plain_path(path)
            if path.suffix == ".ipynb":
                data = notebook_code(data, path.name).encode("utf-8")
        except (NotebookError, safe_files.RefusedFile) as error:
            result = ExerciseResult(record.id, [cannot_load(p, str(error)) for p in record.parts])
            return Graded(record, path, result, note=note.strip())
        safe_files.write_new(Path(scratch), record.file, data)
        answers = path.parent / "answers"
        if answers.is_dir() and not answers.is_symlink():  # written answers sit beside it
            safe_files.copy_tree(answers, Path(scratch) / "answers")
        result = grade(
            record.id, scratch, seed=seed, timeout=timeout, sandbox=policy, observe=collector
        )
    result.submission = str(path)
    return Graded(record, path, result, collector.pictures if collector else [], note=note.strip())


def find_notebook(record: Exercise, notebook=None) -> Path:
    """The notebook to grade: the one named, else `<stem>.ipynb` in the current folder (or the
    exercise's `.py` file beside it, where that is the one edited: grader.notebook.edited),
    else the kit's exercises/ (where `grader stubs` puts them; exercises/zh/ in Chinese)."""
    if notebook is not None:
        return Path(notebook).expanduser().resolve()
    name = notebook_name(record)
    here = Path.cwd() / name
    if here.is_file() and (Path.cwd() / record.file).is_file():
        chosen = edited_form(Path.cwd() / record.file, here, record.file)
        return here if chosen.untouched else chosen.path
    return here if here.is_file() else i18n.stubs_folder(KIT / "exercises") / name


def kernel_history() -> list[str] | None:
    """The cells this IPython kernel has run, in order (IPython's `In`); None outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None:
        return None
    history = shell.user_ns.get("In")
    return (
        [cell for cell in history if isinstance(cell, str)] if isinstance(history, list) else None
    )


def in_jupyter() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def unsaved_changes(path: Path, history: list[str] | None) -> str:
    """Why grading the saved notebook would grade other code than the kernel last ran, or "".

    Each top-level function or class the kernel has run is compared (as parsed code: spacing and
    comments aside) with the one of the same name in the saved notebook.
    """
    if not history:
        return ""
    try:
        saved = _definitions(notebook_code(safe_files.read_plain_path(path), path.name))
    except (NotebookError, SyntaxError, OSError, safe_files.RefusedFile):
        return ""  # grading reports the file's own problem
    ran: dict[str, str] = {}
    for cell in history:
        try:
            ran.update(_definitions(python_of_cell(cell)))
        except (SyntaxError, ValueError):
            continue
    differ = [name for name in ran if name in saved and ran[name] != saved[name]]
    if not differ:
        return ""
    names = ", ".join(f"`{name}`" for name in differ)
    return n_(
        "{names} as this kernel last ran it differs from the saved {file}. check() grades the "
        "saved file, so it would grade other code than the code you ran.\nSave the notebook "
        "(Ctrl+S, or File > Save), run the changed cell again if you edited it after running "
        "it, then run the check again.",
        "{names} as this kernel last ran them differs from the saved {file}. check() grades the "
        "saved file, so it would grade other code than the code you ran.\nSave the notebook "
        "(Ctrl+S, or File > Save), run the changed cell again if you edited it after running "
        "it, then run the check again.",
        len(differ),
        names=names,
        file=path.name,
    )


def _definitions(code: str) -> dict[str, str]:
    tree = ast.parse(code)
    return {
        node.name: ast.dump(node)
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
