"""What a child reports about the cases of one part: written and read with the same functions.

A child answers a part with one bundle (grader.vocabulary.bundle): its metadata is
`{"import_error": None or a failure, "cases": [one report per case]}`, and its arrays are named
by `output_key` and `grad_key`. The child (grader.sandbox.child) writes reports with `answered`
and `failed`; the grader reads them back with `read_case_outputs` and `import_failure`, which
treat anything malformed as a crash: the child may run hostile code, so nothing it wrote is
trusted. A fixture file (grader.engine.references) stores the reference's answers the same way.
What came back from one run of a child (its state, time, report and arrays) is an `Outcome`: the
sandbox makes it (grader.sandbox.processes), the engine judges it.

Only NumPy and the standard library are imported: the sandboxed child uses this module.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from grader.i18n import _
from grader.vocabulary.status import CaseStatus, Limit, RunState
from grader.vocabulary.text import one_line

# The words of a failure, as the child describes it (grader.sandbox.child.describe).
FAILURE_FIELDS = ("exception", "message", "where")
# The most frames of the student's file a failure reports (the innermost ones).
MAX_FRAMES = 20


@dataclass
class Outcome:
    """One run of a child, as the sandbox saw it: how it ended (`state`), how long it took, its
    exit code, its report (`meta`, see above) and arrays, the tail of its log and what the
    sandbox refused it."""

    state: RunState
    seconds: float
    exitcode: int | None = None
    meta: dict = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    log_tail: str = ""
    problem: str = ""
    # Calls the sandbox refused, by kind (process, signal, ptrace, open, import), and examples.
    refused: dict = field(default_factory=dict)
    refused_examples: dict = field(default_factory=dict)
    # It never finished importing the submission: what happened, happened at its top level.
    importing: bool = False


@dataclass(frozen=True)
class Frame:
    """A frame of the student's file in a failure's traceback, as data the child reported:
    file name, line, function and that line's source (shown, never run)."""

    file: str
    line: int
    function: str
    code: str
    # The names of the function's parameters (what it was given).
    arguments: tuple[str, ...] = ()


def output_key(index: int) -> str:
    return f"case{index}/output"


def grad_key(index: int, name: str) -> str:
    return f"{_grad_prefix(index)}{name}"


def _grad_prefix(index: int) -> str:
    return f"case{index}/grad/"


def after_key(index: int, name: str) -> str:
    """The key of input `name` of case `index` as the submission left it after the call."""
    return f"{_after_prefix(index)}{name}"


def _after_prefix(index: int) -> str:
    return f"case{index}/after/"


@dataclass(eq=False)  # holds arrays: compared by identity, like spec.Case
class CaseOutput:
    status: CaseStatus
    output: np.ndarray | None = None
    grads: dict[str, np.ndarray] = field(default_factory=dict)
    # Each input as the call left it, by name (the grader compares it with what it sent).
    after: dict[str, np.ndarray] = field(default_factory=dict)
    dtype: str = ""
    exception: str = ""
    message: str = ""
    where: str = ""
    # The limit of the sandbox the failure ran into, if the child saw one.
    limit: Limit | None = None
    # The student's frames of the failure, outermost first (`where` is the last of them).
    frames: tuple[Frame, ...] = ()

    def error_words(self) -> str:
        """The failure as a student reads it: exception, message and where in their file."""
        words = f"{self.exception}: {self.message}" if self.exception else self.message
        return words + (f" [{self.where}]" if self.where else "")


class MalformedReport(ValueError):
    """A child's report that is not what the protocol allows: a field of the wrong kind, a
    name it may not use, a value that disagrees with its arrays. Treated as a crash (zero for
    the part) and flagged for the instructor: an honest child never writes one."""


# The fields of a case's report, by status: what `answered` and `failed` write, and no more.
_ANSWERED_FIELDS = {"status", "output_dtype", "grads"}
_FAILED_FIELDS = {"status", "limit", "frames", *FAILURE_FIELDS}
# Gradient and argument names are identifiers, weights' paths and the child's own prefixes.
_NAME = re.compile(r"^[A-Za-z0-9_:./\-]{1,200}$")


def answered(index: int, output: np.ndarray, grads: dict, arrays: dict, after=None) -> dict:
    """The report of case `index`, which returned `output` (and these gradients, by name, and
    left its inputs as `after`, by name); the arrays go into `arrays`, under the keys the
    grader reads them from."""
    arrays[output_key(index)] = output
    for name, grad in grads.items():
        arrays[grad_key(index, name)] = grad
    for name, value in (after or {}).items():
        arrays[after_key(index, name)] = value
    return {"status": CaseStatus.OK, "output_dtype": str(output.dtype), "grads": list(grads)}


def failed(status: CaseStatus, failure: dict) -> dict:
    """The report of a case that gave no answer: not implemented, or it raised (`failure` as
    grader.sandbox.child.describe gives it)."""
    return {"status": status, **failure}


def read_case_outputs(outcome: Outcome, count: int) -> list[CaseOutput]:
    """Parse a child's report; anything malformed raises ValueError (treated as a crash), and a
    report whose fields are not what `answered` and `failed` write raises MalformedReport."""
    reports = outcome.meta.get("cases")
    if not isinstance(reports, list) or len(reports) != count:
        raise ValueError(_("the process reported a malformed result"))
    outputs = []
    for index, report in enumerate(reports):
        if not isinstance(report, dict) or not _is_word(report.get("status"), CaseStatus):
            raise ValueError(_("the process reported a malformed result"))
        status = CaseStatus(report["status"])
        if status != CaseStatus.OK:
            _only_fields(report, _FAILED_FIELDS)
            outputs.append(_failure(status, report))
            continue
        _only_fields(report, _ANSWERED_FIELDS)
        prefix, left = _grad_prefix(index), _after_prefix(index)
        output = outcome.arrays.get(output_key(index))
        grads = {k[len(prefix) :]: v for k, v in outcome.arrays.items() if k.startswith(prefix)}
        outputs.append(
            CaseOutput(
                status,
                output=output,
                grads=grads,
                after={k[len(left) :]: v for k, v in outcome.arrays.items() if k.startswith(left)},
                dtype=_reported_dtype(report, output),
            )
        )
        _check_grad_names(report.get("grads", []), grads)
    return outputs


def _only_fields(report: dict, allowed: set[str]) -> None:
    unknown = sorted(set(report) - allowed)
    if unknown:
        raise MalformedReport(
            _("the process reported a field it may not: {name}", name=one_line(unknown[0], 60))
        )


def _reported_dtype(report: dict, output) -> str:
    """The output's dtype: NumPy's name of the array that came back, which the report must
    agree with (the child writes it from the same array)."""
    if output is None:
        raise MalformedReport(_("the process reported an answer without its array"))
    actual = str(np.asarray(output).dtype)
    reported = report.get("output_dtype", actual)
    if not isinstance(reported, str) or reported != actual:
        raise MalformedReport(
            _(
                "the process reported the dtype {reported} for an array of dtype {actual}",
                reported=one_line(repr(reported), 60),
                actual=actual,
            )
        )
    return actual


def _check_grad_names(names, grads: dict) -> None:
    if (
        not isinstance(names, list)
        or len(names) > 10_000
        or not all(isinstance(name, str) and _NAME.match(name) for name in names)
        or set(names) != set(grads)
    ):
        raise MalformedReport(_("the process reported gradients that do not match its arrays"))


def import_failure(outcome: Outcome) -> CaseOutput | None:
    """Why the child could not import the submission, or None when it did. A failure that is
    not a mapping raises ValueError (a malformed report)."""
    failure = outcome.meta.get("import_error")
    if not failure:
        return None
    if not isinstance(failure, dict):
        raise ValueError(_("the process reported a malformed result"))
    return _failure(CaseStatus.ERROR, failure)


def _failure(status: CaseStatus, report: dict) -> CaseOutput:
    limit = report.get("limit")
    if limit is not None and not _is_word(limit, Limit):
        raise ValueError(_("the process reported a malformed result"))
    if not all(isinstance(report.get(key, ""), str) for key in FAILURE_FIELDS):
        raise MalformedReport(_("the process reported a failure whose words are not text"))
    text = {key: one_line(report.get(key, "")) for key in FAILURE_FIELDS}
    limit = Limit(limit) if limit is not None else None
    return CaseOutput(status, **text, limit=limit, frames=_frames(report.get("frames", [])))


_FRAME_FIELDS = ("file", "line", "function", "code", "arguments")


def _frames(reported) -> tuple[Frame, ...]:
    """The frames a child reported, checked field by field (plain strings and an int, nothing
    else is accepted); anything else raises ValueError (a malformed report)."""
    if not isinstance(reported, list) or len(reported) > MAX_FRAMES:
        raise ValueError(_("the process reported a malformed result"))
    frames = []
    for frame in reported:
        if not isinstance(frame, dict) or set(frame) != set(_FRAME_FIELDS):
            raise ValueError(_("the process reported a malformed result"))
        line, arguments = frame["line"], frame["arguments"]
        texts = [frame[key] for key in ("file", "function", "code")]
        if (
            type(line) is not int
            or not all(isinstance(text, str) for text in texts)
            or not isinstance(arguments, list)
            or len(arguments) > 50
            or not all(isinstance(name, str) and name.isidentifier() for name in arguments)
        ):
            raise ValueError(_("the process reported a malformed result"))
        file, function, code = (one_line(text, 300) for text in texts)
        frames.append(Frame(file, line, function, code, tuple(arguments)))
    return tuple(frames)


def _is_word(value, vocabulary) -> bool:
    return isinstance(value, str) and value in {member.value for member in vocabulary}


def refused_counts(outcomes: Iterable[Outcome]) -> tuple[dict[str, int], dict[str, list[str]]]:
    """What the sandbox refused the parts of one exercise: by kind, the count (the most any
    part saw: the parts share a child, whose counts run on) and examples (a few more from each
    part that adds new ones)."""
    counts: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    for outcome in outcomes:
        for kind, count in outcome.refused.items():
            counts[kind] = max(counts.get(kind, 0), int(count))
        for kind, paths in outcome.refused_examples.items():
            examples.setdefault(kind, [])
            examples[kind] += [p for p in paths if p not in examples[kind]][:5]
    return counts, examples
