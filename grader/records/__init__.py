"""Every exercise the grader knows, one declarative record each (see grader.spec)."""

from __future__ import annotations

import difflib

from grader.records import ex8_2
from grader.spec import Exercise

EXERCISES: dict[str, Exercise] = {record.id: record for record in (ex8_2.RECORD,)}


class UnknownExercise(KeyError):
    def __init__(self, exercise_id: str):
        known = ", ".join(EXERCISES)
        nearest = difflib.get_close_matches(exercise_id, list(EXERCISES), n=1, cutoff=0.0)
        hint = f" Did you mean {nearest[0]}?" if nearest else ""
        super().__init__(f"Unknown exercise {exercise_id!r}. Known exercises: {known}.{hint}")

    def __str__(self) -> str:
        return self.args[0]


def get_exercise(exercise_id: str) -> Exercise:
    try:
        return EXERCISES[exercise_id]
    except KeyError:
        raise UnknownExercise(exercise_id) from None
