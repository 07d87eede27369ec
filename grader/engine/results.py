"""Grading results as plain dataclasses; `to_dict()` gives the result format of EXERCISES.md.

What a check or a part is besides its words (the case status behind a failed check, the limit it
ran into, the grader's own failure) is kept in fields of its own, so that whatever reads a
result decides on those, never on a message; `to_dict()` leaves them out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.i18n import _
from grader.vocabulary.status import CaseStatus, Limit, Status

# The part statuses by their old names, which records and tests import.
PASSED = Status.PASSED
FAILED = Status.FAILED
NOT_IMPLEMENTED = Status.NOT_IMPLEMENTED
ERROR = Status.ERROR
TIMEOUT = Status.TIMEOUT
STATUSES = tuple(Status)


# The mistake name of a failed property or training gate: this prefix and its name.
PROPERTY = "property: "


@dataclass
class CheckResult:
    name: str
    passed: bool
    message: str = ""
    # The known mistake this failure matches, if any (also named in `message`).
    mistake: str | None = None
    # Why there was nothing to compare, when the child gave no answer for the case: it was not
    # implemented, or it raised. None for a check that compared an answer.
    cause: CaseStatus | None = None
    # The limit of the sandbox the failure ran into, if one (the batch explains it).
    limit: Limit | None = None
    # A check of a hidden case: its details are shown only once grades are published.
    hidden: bool = False
    # Where and what, when `message` ends with it in parentheses (the worst element, expected
    # against received), so that feedback can show the explanation first and this after it.
    detail: str = ""
    # The error as the framework worded it, when `message` is its translation (--verbose).
    raw: str = ""
    # Which of the part's cases (their order in the record) it checked, where it checked one:
    # the picture of a failed part shows the case its text names (grader.pictures).
    case: int | None = None

    @property
    def words(self) -> str:
        """`message` without its `detail`: the explanation alone."""
        # As grader.engine.compare joined them, in the language in use: " (…)" or "（…）".
        suffix = _("{message} ({detail})", message="", detail=self.detail)
        return (
            self.message[: -len(suffix)]
            if self.detail and self.message.endswith(suffix)
            else self.message
        )

    def to_dict(self) -> dict:
        data = {"name": self.name, "passed": self.passed, "message": self.message}
        # What feedback ranks a failure by, kept so that a batch's feedback files (written from
        # the result files) read as `grader check` does; a passed check stays three keys.
        for key in ("mistake", "cause", "detail", "raw"):
            if getattr(self, key):
                data[key] = str(getattr(self, key))
        return data

    @classmethod
    def from_dict(cls, data: dict) -> CheckResult:
        """A check back from `to_dict()` (a batch's result file): only the fields feedback
        reads, each a string; an unknown cause is none."""
        text = lambda key: str(data.get(key) or "")  # noqa: E731
        cause = text("cause")
        return cls(
            text("name"),
            bool(data.get("passed")),
            text("message"),
            mistake=text("mistake") or None,
            cause=CaseStatus(cause) if cause in set(CaseStatus) else None,
            detail=text("detail"),
            raw=text("raw"),
        )


@dataclass
class PartResult:
    name: str
    max_score: float
    status: Status
    checks: list[CheckResult] = field(default_factory=list)
    # A line for the whole part: why it did not run, or what it printed when it crashed.
    summary: str = ""
    # Set when the grader's own machinery failed on this part (for the instructor's eyes): the
    # part is then not graded at all, and a later run grades it again.
    grader_error: str = ""
    # Set when the child's report broke the protocol (grader.vocabulary.protocol.MalformedReport):
    # the part scores zero as a crash, and the instructor sees a flag.
    report_refused: str = ""

    def __post_init__(self):
        self.max_score = float(self.max_score)
        self.status = Status(self.status)

    @property
    def score(self) -> float:
        return self.max_score if self.status == PASSED else 0.0

    @property
    def mistakes(self) -> list[str]:
        return sorted({c.mistake for c in self.checks if c.mistake})

    @classmethod
    def from_dict(cls, data: dict) -> PartResult:
        status = data.get("status")
        return cls(
            str(data.get("name", "")),
            float(data.get("max_score", 0.0)),
            Status(status) if status in set(Status) else Status.ERROR,
            [CheckResult.from_dict(check) for check in data.get("checks", [])],
        )

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "score": self.score,
            "max_score": self.max_score,
            "status": self.status,
            "checks": [c.to_dict() for c in self.checks],
        }


@dataclass
class ExerciseResult:
    exercise: str
    parts: list[PartResult]
    submission: str = ""
    seed: int = 0
    # Written explanations: reported for the instructor, never scored automatically.
    for_instructor: list[dict] = field(default_factory=list)
    # What the sandbox refused the submission (kind -> count), for the instructor.
    refused: dict[str, int] = field(default_factory=dict)
    # A few of them by kind, in words ("memfd_create", "prlimit64 on pid 1", a path).
    refused_examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return float(sum(p.score for p in self.parts))

    @property
    def max_score(self) -> float:
        return float(sum(p.max_score for p in self.parts))

    @property
    def passed(self) -> bool:
        return all(p.status == PASSED for p in self.parts)

    def part(self, name: str) -> PartResult:
        for part in self.parts:
            if part.name == name:
                return part
        raise KeyError(name)

    @classmethod
    def from_dict(cls, data: dict, submission: str = "") -> ExerciseResult:
        parts = [PartResult.from_dict(part) for part in data.get("parts", [])]
        return cls(str(data.get("exercise", "")), parts, submission=submission)

    def to_dict(self) -> dict:
        data = {
            "exercise": self.exercise,
            "score": self.score,
            "max_score": self.max_score,
            "parts": [p.to_dict() for p in self.parts],
        }
        if self.for_instructor:
            data["for_instructor"] = self.for_instructor
        return data
