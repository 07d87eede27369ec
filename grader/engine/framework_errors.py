"""Errors of TensorFlow, Keras and NumPy that students meet, as one sentence that says what to
do, with the student's file and line.

The child reports an error as words (exception, message, where: grader.vocabulary.protocol) and the
student's frames as data; this module reads those in the grader's process, never anything else
the child made. It points to the frame where the bad value was made, not where it was noticed:
a helper of the student's that failed on a value its caller passed it (lengths of shape (B,)
not expanded, used by masked_softmax_from_mask) is reported at the caller's line. An error
it does not know is shown as raised, without the framework's device dump
(`{{function_node __wrapped__MatMul_device_/job:localhost/...}}`); the raw words stay available
for --verbose (CheckResult.raw).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from grader.i18n import N_, _, tr
from grader.vocabulary.protocol import Frame
from grader.vocabulary.spec import LAYER, Case

# TensorFlow's prefix and suffix around an op's own message.
_DEVICE_DUMP = re.compile(r"\{\{function_node [^}]*\}\}\s*")
_OP_SUFFIX = re.compile(r"\s*\[Op:\w+\](?:\s*name:\s*\S*)?\s*$")
_DTYPES = {"double": "float64", "float": "float32", "half": "float16"}


@dataclass(frozen=True)
class Translation:
    """A known error: `pattern` searched in "Exception: message", `words(match, case)` the
    sentence that replaces it."""

    pattern: re.Pattern
    words: object
    # A value of the wrong shape: made by a caller as often as where it was noticed.
    shape: bool = False


def _dtype(name: str) -> str:
    name = name.removeprefix("tf.")
    return _DTYPES.get(name, name)


def _first_input(case: Case) -> str:
    return next(iter(case.inputs), "x")


def _numpy_returned(match, case: Case) -> str:
    where = f"{case.target}.call" if case.kind == LAYER else f"{case.target}()"
    return _(
        "{where} returned a NumPy array (or went through NumPy): gradients cannot flow back "
        "through NumPy. Compute with keras.ops (ops.matmul, ops.transpose, ...) on the tensors "
        "you are given, and return a tensor.",
        where=where,
    )


def _dtype_mismatch(match, case: Case) -> str:
    have, other = _dtype(match["a"]), _dtype(match["b"])
    name = _first_input(case)
    return _(
        "one operand is {have}, the other {other}: a constant or a cast of yours has a fixed "
        "dtype. Make it with the inputs' dtype, e.g. ops.cast(2.0, {name}.dtype) or "
        "tf.constant(2.0, dtype={name}.dtype).",
        have=have,
        other=other,
        name=name,
    )


def _item_assignment(match, case: Case) -> str:
    return _(
        "a tensor cannot be changed in place (x[i] = ...): build a new one instead, with "
        "ops.where, ops.concatenate or ops.stack (or ops.slice_update)."
    )


def _matmul_shapes(match, case: Case) -> str:
    left, right = (tuple(int(v) for v in match[k].split(",") if v) for k in ("a", "b"))
    return _(
        "a matrix product of shapes {left} and {right}: the last size of the first must equal "
        "the first size of the second. Is a matrix transposed, or the wrong one used?",
        left=left,
        right=right,
    )


def _broadcast_shapes(match, case: Case) -> str:
    left, right = (re.sub(r"[\[\]()\s]", "", match[k]) for k in ("a", "b"))
    return _(
        "shapes ({left}) and ({right}) cannot be combined element by element: an axis is "
        "missing (add one with ops.expand_dims or [:, None]) or two axes are swapped.",
        left=left,
        right=right,
    )


TRANSLATIONS = (
    Translation(
        re.compile(r"'numpy\.ndarray' object has no attribute '_id'|numpy\.ndarray.*_keras_"),
        _numpy_returned,
    ),
    Translation(
        re.compile(
            r"same dtype, got (?P<a>tf\.\w+) != (?P<b>tf\.\w+)"
            r"|expected to be a (?P<a2>\w+) tensor but is a (?P<b2>\w+) tensor"
        ),
        lambda match, case: _dtype_mismatch(
            {"a": match["a"] or match["a2"], "b": match["b"] or match["b2"]}, case
        ),
    ),
    Translation(re.compile(r"does not support item assignment"), _item_assignment),
    Translation(
        re.compile(
            r"Matrix size-incompatible: In\[0\]: \[(?P<a>[\d,]*)\], In\[1\]: \[(?P<b>[\d,]*)\]"
        ),
        _matmul_shapes,
        shape=True,
    ),
    Translation(
        re.compile(
            r"Incompatible shapes: (?P<a>\[[\d,]*\]) vs\. (?P<b>\[[\d,]*\])"
            r"|condition (?P<a3>\[[\d,]*\]), then (?P<b3>\[[\d,]*\]).* must be broadcastable"
            r"|could not be broadcast together with shapes (?P<a2>\([\d, ]*\)) (?P<b2>\([\d, ]*\))"
        ),
        lambda match, case: _broadcast_shapes(
            {
                "a": match["a"] or match["a2"] or match["a3"],
                "b": match["b"] or match["b2"] or match["b3"],
            },
            case,
        ),
        shape=True,
    ),
)


def without_dump(message: str) -> str:
    """A TensorFlow message without its device dump and op suffix."""
    return _OP_SUFFIX.sub("", _DEVICE_DUMP.sub("", message)).strip()


# Said after an error reported at the caller's line: where it was raised, on what.
PASSED_FROM_HERE = N_(
    "{sentence} (raised in {function}, line {line}, on a value this line passes to it: fix "
    "that value here)"
)


def explain(
    exception: str,
    message: str,
    where: str,
    case: Case,
    source: Path | None = None,
    frames: tuple[Frame, ...] = (),
) -> str | None:
    """The error in one sentence with where in the student's file (the frame where the bad
    value was made, see `cause_frame`), or None when it is not a framework error this module
    knows, has no dump to strip and was raised where its value was made."""
    text = f"{exception}: {message}"
    # A value of the wrong shape is made by the caller as often as not; other errors belong
    # where they were raised.
    shaped = any(t.pattern.search(text) for t in TRANSLATIONS if t.shape)
    cause, noticed = cause_frame(frames, case, source) if shaped else (None, None)

    def placed(sentence: str) -> str:
        if cause is None:
            return located(sentence, where or _definition(source, case))
        sentence = tr(PASSED_FROM_HERE).format(
            sentence=sentence, function=noticed.function, line=noticed.line
        )
        return located(sentence, _where(cause))

    for translation in TRANSLATIONS:
        match = translation.pattern.search(text)
        if match:
            return placed(translation.words(match, case))
    stripped = without_dump(message)
    if stripped != message:
        return placed(f"{exception}: {stripped}")
    return None


def cause_frame(
    frames: tuple[Frame, ...], case: Case, source: Path | None = None
) -> tuple[Frame | None, Frame | None]:
    """(the caller's frame to report instead, the frame that raised), or (None, None) when the
    error belongs where it was raised. A frame hands the blame to its caller when it is a
    helper (not the case's target nor a layer's call) whose failing line uses what it was
    given (an argument, or, read from the parsed `source`, a name computed from one), and the
    caller made what it passes (`_caller_made`). A caller that passes on its own arguments
    unchanged made nothing (they are the grader's inputs), so the mistake is the helper's, and
    so is the place; without the parsed source nothing shows the caller made anything."""
    own = {case.target, "call"}
    index = len(frames) - 1
    while index > 0 and frames[index].function not in own:
        frame = frames[index]
        given = _given(frame, source)
        if not given & set(re.findall(r"[A-Za-z_]\w*", frame.code)):
            break
        if not _caller_made(frames[index - 1], frame.function, source):
            break
        index -= 1
    if index >= len(frames) - 1:
        return None, None
    return frames[index], frames[-1]


def _caller_made(caller: Frame, callee: str, source: Path | None) -> bool:
    """Whether `caller`'s line passes `callee` a value it made: an expression (not a bare
    name), or a name it assigned before that line (read from the parsed `source`). Only its own
    arguments passed on as they came is "made nothing"; a line that cannot be read is so too."""
    try:
        line = ast.parse(caller.code.strip().removeprefix("return ").strip())
    except SyntaxError:
        return False
    calls = [
        node
        for node in ast.walk(line)
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) == callee
    ]
    if not calls:
        return False
    assigned = _function_assignments(caller, source)
    passed = [arg for call in calls for arg in (*call.args, *(k.value for k in call.keywords))]
    return any(
        not isinstance(arg, ast.Name) or arg.id in assigned or arg.id not in caller.arguments
        for arg in passed
        if not isinstance(arg, ast.Constant)
    )


def _function_assignments(frame: Frame, source: Path | None) -> set[str]:
    """The names `frame`'s function assigns before its line (from the parsed `source`)."""
    function = _function_of(frame, source)
    if function is None:
        return set()
    return {
        name.id
        for node in ast.walk(function)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) and node.lineno < frame.line
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        for name in ast.walk(target)
        if isinstance(name, ast.Name)
    }


def _function_of(frame: Frame, source: Path | None):
    if source is None:
        return None
    try:
        tree = ast.parse(Path(source).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
    return next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name == frame.function
            and node.lineno <= frame.line <= (node.end_lineno or node.lineno)
        ),
        None,
    )


def _given(frame: Frame, source: Path | None) -> set[str]:
    """The frame's arguments, and the names its function assigns from them before its failing
    line (from the parsed file: `keep = ops.cast(mask, "bool")` makes keep given too)."""
    given = set(frame.arguments)
    function = _function_of(frame, source)
    if function is None:
        return given
    assignments = sorted(
        (node for node in ast.walk(function) if isinstance(node, ast.Assign | ast.AugAssign)),
        key=lambda node: node.lineno,
    )
    for node in assignments:
        if node.lineno >= frame.line:
            break
        used = {name.id for name in ast.walk(node.value) if isinstance(name, ast.Name)}
        if used & given:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            given |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return given


def _where(frame: Frame) -> str:
    where = f"{frame.file}, line {frame.line}, in {frame.function}"
    return f"{where}: {frame.code}" if frame.code else where


def located(sentence: str, where: str) -> str:
    """ "ex8_2.py, line 7 (`scores[0] = 0`): sentence", from the child's "ex8_2.py, line 7, in
    call: scores[0] = 0": the place first, as compilers write it."""
    if not where:
        return sentence
    place, _, code = where.partition(": ")
    place = re.sub(r", in \w+$", "", place) if code else place
    return f"{place}{f' (`{code}`)' if code else ''}: {sentence}"


def _definition(source: Path | None, case: Case) -> str:
    """ "lab_mha.py, line 84, in call": where the target's code is (its `call` for a layer), from
    the parsed file; "" when it cannot be found."""
    if source is None:
        return ""
    try:
        tree = ast.parse(Path(source).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return ""
    for node in tree.body:
        if getattr(node, "name", None) != case.target:
            continue
        if isinstance(node, ast.ClassDef):
            for inner in node.body:
                if isinstance(inner, ast.FunctionDef) and inner.name == "call":
                    return f"{Path(source).name}, line {inner.lineno}, in call"
        return f"{Path(source).name}, line {node.lineno}, in {case.target}"
    return ""
