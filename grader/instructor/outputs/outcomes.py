"""What happened to each part of a student's result, in one word the report can count.

A part's status says how its checks went; the batch's flags and grader errors say why there
were no checks to speak of. Read together they give one outcome per part, so that a student who
never handed the file in is not counted with one whose code gave wrong numbers.
"""

from __future__ import annotations

from enum import Enum

from grader.vocabulary.status import Status


class Outcome(str, Enum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_STARTED = "not started"
    MISSING = "missing"
    CRASHED = "crashed"
    TIMED_OUT = "timed out"
    FLAGGED = "flagged"
    GRADER_ERROR = "grader error"

    __str__ = str.__str__
    __format__ = str.__format__


# The order outcomes are shown in, and the colour of each in the report.
ORDER = list(Outcome)
COLOURS = {
    Outcome.PASSED: "#1e7b34",
    Outcome.FAILED: "#b3261e",
    Outcome.NOT_STARTED: "#7a6a00",
    Outcome.MISSING: "#666666",
    Outcome.CRASHED: "#8e24aa",
    Outcome.TIMED_OUT: "#c25e00",
    Outcome.FLAGGED: "#0b57d0",
    Outcome.GRADER_ERROR: "#000000",
}

# Flags about an exercise's file ("<kind>-<exercise>", grader.instructor.batch): none (missing),
# none that can be graded (unusable), or one graded under a near name (renamed).
FILE_FLAGS = ("missing", "unusable", "renamed")
# A file of the submission is also in a classmate's (one file, two names: a hard link).
SHARED_FILE = "same-file-as-classmate"
# Flags that are about the file, the grader or the whole submission, not integrity.
_NOT_INTEGRITY = (*(f"{kind}-" for kind in FILE_FLAGS), "grader-error:", "no-result")


def integrity_flags(document: dict, exercise: str) -> list[str]:
    """The flags that ask the instructor to look at this exercise's code (what it imports or
    opens, what the sandbox refused it), or at the whole submission."""
    return [
        flag
        for flag in document.get("flags", [])
        if flag in ("unsafe-submission", SHARED_FILE)
        or (flag.endswith(f":{exercise}") and not flag.startswith(_NOT_INTEGRITY))
    ]


def classify(document: dict, exercise: dict, part: dict) -> Outcome:
    """The outcome of one part of one student's result document (results/<student>.json)."""
    key = f"{exercise['exercise']} {part['name']}"
    flags = document.get("flags", [])
    if key in document.get("grader_errors", {}):
        return Outcome.GRADER_ERROR
    if f"missing-{exercise['exercise']}" in flags:
        return Outcome.MISSING
    if integrity_flags(document, exercise["exercise"]):
        return Outcome.FLAGGED
    status = part["status"]
    if status == Status.PASSED:
        return Outcome.PASSED
    if status == Status.TIMEOUT:
        return Outcome.TIMED_OUT
    if status == Status.NOT_IMPLEMENTED:
        return Outcome.NOT_STARTED
    if status == Status.ERROR:
        return Outcome.CRASHED
    return Outcome.FAILED


def part_outcomes(document: dict) -> dict[str, Outcome]:
    """Every part of a document: "<exercise> <part>" -> its outcome."""
    return {
        f"{exercise['exercise']} {part['name']}": classify(document, exercise, part)
        for exercise in document.get("exercises", [])
        for part in exercise["parts"]
    }
