"""Every exercise the grader knows: one declarative record (a module with `RECORD`) each.

Records are found by listing this package, so adding an exercise is adding one module here (and
its solution); nothing else is registered by hand.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from pathlib import Path

from grader.i18n import _
from grader.vocabulary.spec import Exercise


def _order(record: Exercise):
    """Book exercises by number (8-1 … 8-6), then labs by name."""
    number = record.id.replace("-", ".")
    try:
        return (0, float(number), "")
    except ValueError:
        return (1, 0.0, record.id)


def _discover() -> dict[str, Exercise]:
    records = []
    for module in pkgutil.iter_modules(__path__):
        loaded = importlib.import_module(f"{__name__}.{module.name}")
        if isinstance(getattr(loaded, "RECORD", None), Exercise):
            records.append(loaded.RECORD)
    if not records:  # a student kit: its records are data (grader.engine.compiled)
        from grader.engine.compiled import load_records

        records = load_records(Path(__file__).resolve().parent.parent / "fixtures")
    return {record.id: record for record in sorted(records, key=_order)}


EXERCISES: dict[str, Exercise] = _discover()


class UnknownExercise(KeyError):
    def __init__(self, exercise_id: str):
        known = ", ".join(EXERCISES)
        keys = {_key(known): known for known in EXERCISES}
        nearest = difflib.get_close_matches(_key(exercise_id), list(keys), n=1, cutoff=0.0)
        nearest = [keys[key] for key in nearest]
        hint = _(" Did you mean {nearest}?", nearest=nearest[0]) if nearest else ""
        super().__init__(
            _(
                "Unknown exercise {exercise}. Known exercises: {known}.{hint}",
                exercise=repr(exercise_id),
                known=known,
                hint=hint,
            )
        )

    def __str__(self) -> str:
        return self.args[0]


def _key(name: str) -> str:
    """How a student may write an exercise: any case, `_` or `.` for `-`, with or without the
    `ex`/`lab_` of its file, or its file's path (`exercises/ex8_2.py`, `lab_mha.ipynb`)."""
    name = name.strip().replace("\\", "/").rsplit("/", 1)[-1].lower()
    for suffix in (".py", ".ipynb"):
        name = name.removesuffix(suffix)
    name = name.replace("_", "-").replace(".", "-").replace(" ", "-")
    for prefix in ("lab-", "ex-", "ex"):
        if name.startswith(prefix) and len(name) > len(prefix):
            name = name[len(prefix) :]
            break
    return name


def get_exercise(exercise_id: str) -> Exercise:
    """The exercise `exercise_id` names: its id, or any way `_key` reads as the same."""
    if exercise_id in EXERCISES:
        return EXERCISES[exercise_id]
    wanted = _key(exercise_id)
    for known, record in EXERCISES.items():
        if wanted in (_key(known), _key(record.file)):
            return record
    # A file saved under another name (`ex8_2 (1).py`, `ex8_2_final.py`, `lab_mha-v2.ipynb`):
    # the exercise whose file name it starts with, the longest such.
    if Path(exercise_id).is_file():
        starts = [
            record for record in EXERCISES.values() if wanted.startswith(_key(record.file) + "-")
        ]
        if starts:
            return max(starts, key=lambda record: len(_key(record.file)))
    raise UnknownExercise(exercise_id)
