"""Every status word the grader uses, defined once: one small vocabulary per question.

Members are strings (`Status.PASSED == "passed"`, `json.dumps` writes "passed", `str()` and
f-strings give the word too), so result files, the zygote's JSON lines and the child's reports
read and write the same text as before there were enums. Only the standard library is imported:
the sandboxed child uses this module.
"""

from __future__ import annotations

from enum import Enum


class _Word(str, Enum):
    """A member that is its own word everywhere a string is (what `enum.StrEnum` does from
    Python 3.11, written out for 3.10)."""

    __str__ = str.__str__
    __format__ = str.__format__


class CaseStatus(_Word):
    """What a child reports for one case: it answered, it is not implemented, or it raised."""

    OK = "ok"
    NOT_IMPLEMENTED = "not_implemented"
    ERROR = "error"


class RunState(_Word):
    """How a child's run of one part ended, as the scheduler saw it from outside.

    GRADER_FAILED: the grader's own machinery failed (the child died or hung before any
    submitted code ran, or the helper process died): never the student's fault, never a grade.
    """

    FINISHED = "finished"
    TIMED_OUT = "timeout"
    CRASHED = "crashed"
    GRADER_FAILED = "grader_failed"


class Status(_Word):
    """The graded status of a part: the word of the result format (EXERCISES.md)."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_IMPLEMENTED = "not_implemented"
    ERROR = "error"
    TIMEOUT = "timeout"


class Limit(_Word):
    """The resource limit or sandbox rule a failure ran into (grader.sandbox.limits), so that
    the batch can say so without reading the failure's words."""

    MEMORY = "memory"
    PROCESSES = "processes"
    OUTPUT = "output"
    SANDBOX = "sandbox"


class Answer(_Word):
    """Whether a written part was answered (reported for the instructor, never scored)."""

    WRITTEN = "written"
    MISSING = "missing"
