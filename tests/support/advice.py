"""What one run of the grader tells a student must agree with itself (issue 49): no two lines
of a run give contradictory fixes, and a part that fails because it calls a broken part says
"fix X first" before any line that is not one of its own named mistakes.

Contradictions can only be checked where they are known, in two tables:

- `CONTRADICTORY_LINES`: two pieces of advice that cannot both be followed, anywhere in a run
  (the lines of every failed part together), unless the first line also gives the second's way.
- `OPPOSITE_MISTAKES`: two named mistakes of one part whose fixes pull the same quantity in
  opposite directions (add the scale / take it out); a part never names both at once.

tests/grader/test_records.py applies both to every planted mistake of every record, graded with
the parts that call the planted one (where "fix X first" and the callers' own lines appear).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from grader import report
from grader.engine import feedback
from grader.engine.results import ExerciseResult
from grader.i18n import tr
from grader.vocabulary.spec import Exercise


@dataclass(frozen=True)
class Contradiction:
    """Advice `one` and advice `other` in one run contradict each other, unless the line of
    `one` also matches `reconciled` (it gives both ways)."""

    why: str
    one: re.Pattern
    other: re.Pattern
    reconciled: re.Pattern | None = None


CONTRADICTORY_LINES = (
    Contradiction(
        # The run that opened issue 49: update_cache told to copy with NumPy, incremental_
        # attention (same run) that a tensor cannot be written in place. Followed literally, the
        # first gives a NumPy cache without gradients in a lab about a Keras decoder.
        "a NumPy copy given as the way to leave an argument unchanged, beside a line that says "
        "a tensor cannot be written in place (ops.slice_update)",
        re.compile(r"np\.(array|copy)\("),
        re.compile(r"cannot be changed in place|slice_update"),
        reconciled=re.compile(r"\bops\.(slice_update|where|concatenate|stack)\b"),
    ),
    Contradiction(
        "a line that says to keep the scale and one that says to take it out",
        re.compile(r"scale (of the scores )?is missing|not divided by √|divide them by √d"),
        re.compile(r"has no 1/√d scale|uses the plain dot product|is the plain h_t"),
    ),
)

# (exercise, part, mistake, mistake): the fixes of the two pull the same way in opposite
# directions. Every name is checked against the records (a renamed mistake fails the test).
OPPOSITE_MISTAKES = (
    ("8-1", "lstm_param_count", "bias forgotten", "two biases per block"),
    ("8-1", "lstm_param_count", "one block only", "three blocks"),
    ("8-1", "gru_param_count", "bias forgotten", "two biases without reset_after"),
    ("8-2", "ScaledDotScore", "scale forgotten", "multiplied by √d"),
    ("8-2", "ScaledDotScore", "scale forgotten", "divided by d"),
    ("8-5", "memn2n_read", "one hop too few", "one hop too many"),
    ("mha", "MultiHeadAttention", "scale forgotten", "scaled by the total width"),
    ("modern-hopfield", "hopfield_update", "β missing", "divided by β"),
    ("modern-hopfield", "retrieve", "β missing", "divided by β"),
    ("kv-cache", "attend_cached", "later positions not masked", "own position masked"),
)

FIX_FIRST = re.compile(r"^fix .+ first: ")


def unknown_opposites(records: dict[str, Exercise]) -> list[tuple[str, str, str, str]]:
    """The rows of OPPOSITE_MISTAKES that name no record's part or mistake."""
    unknown = []
    for row in OPPOSITE_MISTAKES:
        exercise, part, *names = row
        record = records.get(exercise)
        declared = next((p for p in record.parts if p.name == part), None) if record else None
        known = {mistake.name for mistake in declared.mistakes} if declared else set()
        if not set(names) <= known:
            unknown.append(row)
    return unknown


def callers(record: Exercise, source: str, part: str, folder: Path) -> list[str]:
    """The other parts of `record` whose code in `source` calls the code of `part`: graded with
    it, they are where "fix `part` first" is said."""
    path = folder / "callers.py"
    path.write_text(source, encoding="utf-8")
    used = feedback.names_used(path)
    path.unlink()
    called = set(record.part(part).targets)
    return [
        other.name
        for other in record.parts
        if other.name != part
        and set().union(*(used.get(target, set()) for target in other.targets))
        & (called - set(other.targets))
    ]


def run_lines(record: Exercise, result: ExerciseResult) -> dict[str, list[str]]:
    """What the student reads under each failed part (grader check's and the batch feedback's
    renderer), one line per problem (never wrapped)."""
    common, shown = report.problem_lines(record, result, width=100_000)
    lines = {name: [line.strip() for line in part] for name, part in shown.items()}
    if common:
        lines[""] = [line.strip() for line in common]
    return lines


def conflicting_advice(record: Exercise, result: ExerciseResult) -> list[str]:
    """Why the lines of this run disagree with themselves (empty: they agree, as far as the
    tables above know), in English."""
    named = {part.name: set(part.mistakes) for part in result.parts}
    return conflicts(record, run_lines(record, result), named)


def conflicts(
    record: Exercise, lines: dict[str, list[str]], named: dict[str, set[str]]
) -> list[str]:
    """Why these lines (under each part's name) and named mistakes (each part's) of one run of
    `record` disagree with themselves."""
    everything = [line for part in lines.values() for line in part]
    found = []
    for rule in CONTRADICTORY_LINES:
        ones = [
            line
            for line in everything
            if rule.one.search(line)
            and not (rule.reconciled is not None and rule.reconciled.search(line))
        ]
        others = [line for line in everything if rule.other.search(line) and line not in ones]
        if ones and others:
            found.append(f"{rule.why}: {ones[0]!r} and {others[0]!r}")
    for exercise, part_name, one, other in OPPOSITE_MISTAKES:
        if exercise != record.id:
            continue
        if {one, other} <= named.get(part_name, set()):
            found.append(f"{part_name} names both {one!r} and {other!r}")
    for part_name, shown in lines.items():
        first = next((i for i, line in enumerate(shown) if FIX_FIRST.match(line)), None)
        if not first:  # none, or it leads
            continue
        declared = next((p.mistakes for p in record.parts if p.name == part_name), ())
        own = [tr(mistake.explanation) for mistake in declared]
        ahead = [line for line in shown[:first] if not any(line.startswith(o) for o in own)]
        if ahead:
            found.append(f"{part_name}: {ahead[0]!r} comes before {shown[first]!r}")
    return found
