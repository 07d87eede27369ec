"""What counts as internal jargon in what a student reads (tests/grader/test_jargon.py): a tag
of the grader's own ("slip: ", "property: ", "raw: "), a name of its internals (a status enum, a
Python repr), a snake_case name that is not the student's own. tests/grader/test_records.py
checks the English feedback of every planted mistake with it, test_jargon.py the Chinese."""

from __future__ import annotations

import re
from pathlib import Path

from grader.instructor.course.stubs import package_dir
from grader.notebook.html import result_html
from grader.records import get_exercise
from grader.report import render

# A tag of the grader's own at the start of a line or a bracket ("slip: ", "[property: ").
TAG = re.compile(
    r"(?m)(?:^[ \t]*|[\[(（])(slip|property|raw|mistake|cause|status|state|flags?|kind|limit"
    r"|refused|detail|key)\s*[:：]\s"
)
# A bracket's first word followed by a colon names a target of the part ("[sharpen: output").
BRACKET_PREFIX = re.compile(r"[\[（]([A-Za-z_]\w*)[:：]\s")
# The grader's internals as Python shows them.
REPR = re.compile(
    r"<[\w.]+ object at 0x[0-9a-f]+>|\b(?:RunState|CaseStatus|Status|Limit|Answer|Outcome"
    r"|CheckResult|PartResult|ExerciseResult)[.(]"
)
SNAKE = re.compile(r"(?<![\w/.\\-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/.\\-])")
# Mathematics as the explanations write it: h_1, w_j, b_ih (one letter, then its index).
SUBSCRIPT = re.compile(r"[a-z]_[a-z0-9]+")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


# Names of Keras's own API that messages name for the student to use or look for (a gradient
# cut with ops.stop_gradient, a backward RNN's go_backwards): the student's vocabulary, not ours.
KERAS_API = {"stop_gradient", "go_backwards"}


def own_names(exercise: str, submitted: str) -> set[str]:
    """The names a student may read back: those of their file, of the stub and the solution
    (functions, arguments, weights, the names its docstrings use), the parts' targets."""
    record = get_exercise(exercise)
    names = set(IDENTIFIER.findall(submitted))
    for folder in ("exercises", "solutions"):
        names |= set(IDENTIFIER.findall((package_dir(folder) / record.file).read_text("utf-8")))
    names |= {target for part in record.parts for target in part.targets}
    names |= {part.name for part in record.parts}
    names.add(Path(record.file).stem)
    return names | KERAS_API


def jargon(text: str, allowed: set[str]) -> list[str]:
    text = re.sub(r"(?:/[^\s/]+)+/?", " ", text)  # paths (a graded file's, a temporary one)
    found = [match.group(0) for match in TAG.finditer(text)]
    found += [m.group(0) for m in BRACKET_PREFIX.finditer(text) if m.group(1) not in allowed]
    found += [match.group(0) for match in REPR.finditer(text)]
    found += [
        name
        for name in SNAKE.findall(text)
        if name not in allowed and not SUBSCRIPT.fullmatch(name)
    ]
    return sorted(set(found))


def html_text(html: str) -> str:
    html = re.sub(r"<style>.*?</style>", "", html, flags=re.DOTALL)
    html = re.sub(r"<[^>]+>", "\n", html)
    return html.replace("&lt;", "<").replace("&gt;", ">").replace("&#x27;", "'")


def shown_jargon(exercise: str, result, source: str) -> list[tuple[str, list[str]]]:
    """The jargon in each view a student has of `result` (graded from `source`, in the language
    in use): `grader check`'s text, with --verbose, and the HTML view; (view, words)
    for each view that holds some."""
    record = get_exercise(exercise)
    allowed = own_names(exercise, source)
    text = render(record, result, color=False, width=1_000_000)
    verbose = render(record, result, color=False, verbose=True, width=1_000_000)
    html = html_text(result_html(record, result))
    # --verbose quotes the framework's own error as it was raised: its words are not ours.
    quoted = ("(the error as raised: ", "（报错原文：")
    verbose = "\n".join(line for line in verbose.splitlines() if line.strip() not in quoted)
    verbose = re.sub(r"\((?:the error as raised): .*|（报错原文：.*", "", verbose)
    found = [
        (view, jargon(shown, allowed))
        for view, shown in (("text", text), ("verbose", verbose), ("html", html))
    ]
    return [(view, words) for view, words in found if words]
