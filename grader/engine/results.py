"""Grading results as plain dataclasses; `to_dict()` gives the result format of EXERCISES.md."""

from __future__ import annotations

from dataclasses import dataclass, field

PASSED = "passed"
FAILED = "failed"
NOT_IMPLEMENTED = "not_implemented"
ERROR = "error"
TIMEOUT = "timeout"
STATUSES = (PASSED, FAILED, NOT_IMPLEMENTED, ERROR, TIMEOUT)


@dataclass
class CheckResult:
    name: str
    passed: bool
    message: str = ""
    # The known mistake this failure matches, if any (also named in `message`).
    mistake: str | None = None

    def to_dict(self) -> dict:
        return {"name": self.name, "passed": self.passed, "message": self.message}


@dataclass
class PartResult:
    name: str
    max_score: float
    status: str
    checks: list[CheckResult] = field(default_factory=list)
    # A line for the whole part: why it did not run, or what it printed when it crashed.
    summary: str = ""
    # Set when the grader's own machinery failed on this part (for the instructor's eyes): the
    # part is then not graded at all, and a later run grades it again.
    grader_error: str = ""

    def __post_init__(self):
        self.max_score = float(self.max_score)

    @property
    def score(self) -> float:
        return self.max_score if self.status == PASSED else 0.0

    @property
    def mistakes(self) -> list[str]:
        return sorted({c.mistake for c in self.checks if c.mistake})

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
