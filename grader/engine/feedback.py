"""What a student reads of a failed part: its problems, the most useful first, each once.

A part fails on many checks (every case, its output, dtype and gradients), mostly for one
reason. The reason a student can act on is, in order: a mistake the record names or a property
it breaks; a diagnosis of the engine's (a constant factor, a transpose, a slip of
grader.engine.diagnosis, a cut gradient, an explained framework error); an error as it was
raised; and last "N of M values differ". An output check comes before the dtype and the
gradients of the same rank, and a part that calls another failing part of the student's says
to fix that one first (`causes`).
"""

from __future__ import annotations

import ast
import re
import shutil
from enum import IntEnum
from pathlib import Path

from grader.engine import diagnosis
from grader.engine.compare import DIAGNOSED, GENERIC
from grader.engine.results import PROPERTY, CheckResult, ExerciseResult, PartResult
from grader.i18n import N_, _, display_width, n_, tr
from grader.vocabulary.spec import Exercise
from grader.vocabulary.status import CaseStatus, Status

SHOWN_PROBLEMS = 2
# The names of the one check of a part that failed for the whole file (grader.engine.judging).
WHOLE_FILE = ("load", "import")
INDENT = "      "


class Rank(IntEnum):
    """How much a failed check tells a student, the most first."""

    NAMED = 0
    # A slip found by search that reproduces every failing output: the cause, where a property
    # (below) states what the output breaks.
    FOUND = 1
    PROPERTY = 2
    DIAGNOSIS = 3
    ERROR = 4
    DIFFER = 5
    # Gradient values that differ: the output's own problem, seen again through its gradient.
    GRADIENT_DIFFERS = 6
    NOT_IMPLEMENTED = 7


# The names judging gives a case's checks, by kind (0 output, 2 dtype, 3 a gradient): the
# English templates, matched as translated too, so that problems rank alike in every language.
CHECK_NAMES = (
    (0, N_("output, {label}")),
    (2, N_("dtype, {label}")),
    (3, N_("gradient wrt {wrt}, {label}")),
)


def _named(name: str, template: str) -> bool:
    """Whether `name` is `template` (English or as translated) filled with any values."""
    for text in {template, tr(template)}:
        pattern = re.sub(r"\\\{\w+\\\}", ".*", re.escape(text))
        if re.fullmatch(pattern, name, flags=re.DOTALL):
            return True
    return False


def check_kind(check: CheckResult) -> int:
    """0 output, 1 a property or an error of the case, 2 dtype, 3 a gradient."""
    name = check.name.split(": ", 1)[-1] if ": " in check.name else check.name
    if name.startswith("no gradient"):
        return 3
    for kind, template in CHECK_NAMES:
        if _named(name, template):
            return kind
    return 1


def rank(check: CheckResult) -> Rank:
    if check.cause == CaseStatus.NOT_IMPLEMENTED:
        return Rank.NOT_IMPLEMENTED
    if check.mistake:
        if check.mistake.startswith(diagnosis.SEARCHED):
            return Rank.FOUND
        if check.mistake.startswith(PROPERTY):
            return Rank.PROPERTY
        generic = check.mistake in GENERIC or check.mistake.startswith(DIAGNOSED)
        return Rank.DIAGNOSIS if generic else Rank.NAMED
    if check.raw:  # a framework error, explained
        return Rank.DIAGNOSIS
    if check.cause == CaseStatus.ERROR or check_kind(check) == 1:
        return Rank.ERROR
    return Rank.GRADIENT_DIFFERS if check_kind(check) == 3 else Rank.DIFFER


def problem_key(check: CheckResult) -> str:
    """Checks with one key are one problem: a mistake on every case is shown once."""
    if check.mistake:
        return check.mistake
    if rank(check) in (Rank.DIFFER, Rank.GRADIENT_DIFFERS):
        return f"differ {check_kind(check)}"
    return check.words


def problems(part: PartResult) -> list[CheckResult]:
    """The part's failed checks, one per problem, the most useful first (stable: case order
    within a rank and kind)."""
    failed = [check for check in part.checks if not check.passed]
    counts: dict[str, int] = {}
    for check in failed:
        counts[problem_key(check)] = counts.get(problem_key(check), 0) + 1
    # Within a rank, an output's problem before a gradient's (which is mostly the output's
    # seen again), then the problem seen on the most cases first.
    failed.sort(
        key=lambda check: (
            rank(check),
            check_kind(check) == 3,
            -counts[problem_key(check)],
            check_kind(check),
        )
    )
    distinct, seen = [], set()
    for check in failed:
        key = problem_key(check)
        if key not in seen:
            seen.add(key)
            distinct.append(check)
    return distinct


def problem_text(check: CheckResult, first: bool) -> str:
    """One line: the explanation first, then on which check; where and what only for the
    first problem of a part (the others are read after fixing it)."""
    words = check.words
    if check.name in words or check.name in WHOLE_FILE:
        return words
    detail = _shortened(check.detail)
    context = (
        _("{check}: {detail}", check=check.name, detail=detail) if first and detail else check.name
    )
    return f"{words} [{context}]"


def _shortened(detail: str) -> str:
    """ "N of M values differ from the reference" as "N of M differ", in the language in use:
    beside the check's name the rest goes without saying."""
    long = _("{count} of {size} values differ from the reference")
    pattern = re.escape(long).replace(r"\{count\}", r"(?P<count>\d+)")
    pattern = pattern.replace(r"\{size\}", r"(?P<size>\d+)")
    return re.sub(
        pattern,
        lambda match: _("{count} of {size} differ", **match.groupdict()),
        detail,
    )


def wrap(line: str, width: int | None = None, indent: str = INDENT) -> list[str]:
    """`line` wrapped to the terminal's width (at least 60 columns), its follow-on lines
    indented two more. Widths are display columns (a Chinese character takes two), and a line
    may break between two Chinese characters as between two words."""
    width = width or shutil.get_terminal_size((100, 24)).columns
    wrapped = []
    for paragraph in line.split("\n"):
        wrapped += _fill(paragraph, max(60, width - 1), indent, indent + "  ") or [indent]
    return wrapped


# Units a line may break between: a wide (CJK) character with the punctuation that may not
# begin a line, or a run of narrow characters (a word), or whitespace.
WIDE = "\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6"
NO_BREAK_BEFORE = "，。、；：！？）」』》〉】,.;:!?)"
_UNITS = re.compile(rf"\s+|[{WIDE}][{NO_BREAK_BEFORE}]*|[^\s{WIDE}]+")


def _fill(text: str, width: int, first: str, rest: str) -> list[str]:
    """Greedy filling by display width, as textwrap fills by characters: whitespace inside a
    line is kept (each character one space), dropped where a line breaks; a unit wider than a
    line is cut to fill it."""
    lines: list[str] = []
    line, used, gap, empty = first, display_width(first), "", True
    for index, unit in enumerate(_UNITS.findall(text.expandtabs())):
        if unit.isspace():  # kept inside a line, and at the very start (as textwrap keeps it)
            gap = " " * len(unit) if index == 0 or not empty else ""
            continue
        size = display_width(unit)
        longer_than_a_line = size > width - display_width(rest)
        if not empty and used + len(gap) + size > width and not longer_than_a_line:
            lines.append(line)
            line, used, gap, empty = rest, display_width(rest), "", True
        line, used = line + gap, used + len(gap)
        while used + display_width(unit) > width and len(unit) > 1:  # longer than a line
            cut = _columns(unit, width - used)
            lines.append(line + unit[:cut])
            line, used, unit = rest, display_width(rest), unit[cut:]
        line, used, gap, empty = line + unit, used + display_width(unit), "", False
    if not empty:
        lines.append(line)
    return lines


def _columns(text: str, room: int) -> int:
    """How many characters of `text` fit in `room` columns (at least one)."""
    used = 0
    for index, character in enumerate(text):
        used += display_width(character)
        if used > room:
            return max(1, index)
    return len(text)


def common_failure(result: ExerciseResult) -> str:
    """The one message every part failed with, when the file could not be loaded or imported
    (shown once, not once per part), or ""."""
    messages = set()
    for part in result.parts:
        failed = [check for check in part.checks if not check.passed]
        if part.status == Status.PASSED or len(failed) != 1 or failed[0].name not in WHOLE_FILE:
            return ""
        messages.add(failed[0].message)
    return messages.pop() if len(messages) == 1 and len(result.parts) > 1 else ""


def causes(record: Exercise, result: ExerciseResult) -> dict[str, list[str]]:
    """For each failed part, the other failed parts whose functions or classes its own code
    calls (read from the submitted file, which is parsed, never run): fix those first."""
    failed = {part.name for part in result.parts if part.status != Status.PASSED}
    graded = {part.name for part in result.parts}
    used = names_used(Path(result.submission)) if failed else {}
    found: dict[str, list[str]] = {}
    for part in record.parts:
        if part.name not in failed:
            continue
        calls = set().union(*(used.get(target, set()) for target in part.targets))
        found[part.name] = [
            other.name
            for other in record.parts
            if other.name != part.name
            and other.name in failed & graded
            and calls & (set(other.targets) - set(part.targets))
        ]
    return {name: others for name, others in found.items() if others}


def names_used(path: Path) -> dict[str, set[str]]:
    """Each top-level function or class of the file, and the names its code refers to."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return {}
    used = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            used[node.name] = {
                inner.id if isinstance(inner, ast.Name) else inner.attr
                for inner in ast.walk(node)
                if isinstance(inner, ast.Name | ast.Attribute)
            } - {node.name}
    return used


def shown_problems(part: PartResult) -> tuple[list[CheckResult], list[CheckResult], int]:
    """The problems shown under a failed part (without --verbose): those recognised on the
    part's own checks (a record's named mistake, a property, a diagnosis), every one of them,
    and the others, the first few; and how many more there are."""
    found = problems(part)
    if any(check_kind(check) == 0 for check in found):
        # The output is wrong already: that its gradients differ too says nothing more.
        found = [check for check in found if rank(check) != Rank.GRADIENT_DIFFERS]
    shown = found[:1] + [
        check
        for check in found[1:SHOWN_PROBLEMS]
        if rank(check) <= max(rank(found[0]), Rank.DIAGNOSIS)
    ]
    chosen = {id(check) for check in shown}
    shown += [check for check in found if check.mistake and id(check) not in chosen]
    shown.sort(key=lambda check: next(i for i, c in enumerate(found) if c is check))
    recognised = [check for check in shown if check.mistake]
    others = [check for check in shown if not check.mistake]
    return recognised, others, len(found) - len(shown)


def first_problem(part: PartResult) -> CheckResult | None:
    """The check a failed part's text names first (its case, its element), if any."""
    recognised, others, _more = shown_problems(part)
    return (recognised or others or [None])[0]


def part_lines(
    part: PartResult,
    before: list[str] = (),
    width: int | None = None,
    own: frozenset[str] | set[str] = frozenset(),
) -> list[str]:
    """What is shown under a failed part's line (without --verbose): its first problems, each
    once, wrapped, and `before` (the parts to fix first). A mistake the record declares for
    this part (`own`, their names) is the student's to act on here: it comes before "fix X
    first" (a part can have its own bug besides the one it inherits). Any other recognition (a
    property, a diagnosis, an argument changed) may be the broken part's own, showing through
    the call: it comes after. Every recognised mistake is shown, never left behind "… N more
    problems" for --verbose."""
    recognised, others, hidden = shown_problems(part)
    if before:
        inherited = [check for check in recognised if check.mistake not in own]
        recognised = [check for check in recognised if check.mistake in own]
        others = inherited + others
    lines = []
    for index, check in enumerate(recognised):
        lines += wrap(problem_text(check, first=index == 0), width)
    for cause in before:
        lines += wrap(cause, width)
    for index, check in enumerate(others):
        first = index == 0 and not recognised and not before
        lines += wrap(problem_text(check, first=first), width)
    if hidden > 0:
        more = n_(
            "… {count} more problem (--verbose lists every check)",
            "… {count} more problems (--verbose lists every check)",
            hidden,
            count=hidden,
        )
        lines += wrap(more, width)
    return lines


def cause_words(part: str, others: list[str]) -> str:
    """ "fix split_heads first: …" for a part whose code calls other parts that fail."""
    if len(others) == 1:
        return _(
            "fix {other} first: {part} calls it, and it fails its own checks",
            other=others[0],
            part=part,
        )
    return _(
        "fix {others} first: {part} calls them, and they fail their own checks",
        others=_(" and ").join(others),
        part=part,
    )
