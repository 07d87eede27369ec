"""How useful the grader's feedback is: every planted mistake of the test suite, graded and
rendered as `grader check` shows it to a student.

    python benchmarks/feedback_bench.py              # every planted mistake (a few minutes)
    python benchmarks/feedback_bench.py --only mha   # the planted mistakes of some exercises
    python benchmarks/feedback_bench.py --show       # print each first line too
    python benchmarks/feedback_bench.py --set tests/mistakes/heldout   # a set of submissions

A set (--set DIR) is a folder of whole submitted files written by an author who had not seen
the grader, each `<exercise file stem>__<slug>.py`, with a `manifest.json` that says, per file,
whether it is correct and, if not, which parts its mistake breaks and what the mistake is. For a
set it prints: how many correct files keep full marks; how many wrong ones lose every part
their mistake breaks; how many first read (the first line under the first failed part, as
`grader check` prints it) a diagnosis beyond "values differ"; and, from DIR/judgments.json
(written by a judge who compares each first line with the author's words: "right", "vague" or
"misleading"), how many of those point at the real mistake and how many elsewhere. Lines no
judge has seen yet are counted as unjudged and written to DIR/unjudged.<lang>.json. `--lang zh`
measures the Chinese feedback.

It prints the fraction of planted mistakes whose first line of feedback is more than "N of M
values differ" (a named mistake, a property, a diagnosis, an explained error; goal: at least
80 %), the median length in characters of the text a student reads for the failed part (without
--verbose), and then grades the correct alternatives of the test suite: none may lose a point.

The planted mistakes are the `PLANTED` tables of tests/grader/test_*.py: (part, source or
answers, mistake, phrase); a source is written under the module's HEADER, answers fill the
stub (tests.grader.test_ex8_3.fill_stub), as the tests themselves do.
"""

from __future__ import annotations

import argparse
import importlib
import re
import statistics
import sys
import tempfile
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(KIT))

# The words of a difference that says nothing but that values differ.
BARE = re.compile(
    r"^(?:\S.*[:：] ?)?(?:\d+ of \d+ values differ|the value differs from the"
    r"|\d+ 个值中有 \d+ 个与参考答案不同|(?:该|这个)?值与参考答案不同)"
)


def planted_modules():
    """(exercise id, test module) for every test module with a PLANTED table."""
    for path in sorted((KIT / "tests" / "grader").glob("test_*.py")):
        if "PLANTED" not in path.read_text(encoding="utf-8"):
            continue
        module = importlib.import_module(f"tests.grader.{path.stem}")
        exercise = getattr(module, "EXERCISE", None) or getattr(module, "LAB", None)
        if exercise is None:
            exercise = path.stem.removeprefix("test_ex").replace("_", "-")
        yield exercise, module


def source_of(exercise: str, module, body) -> tuple[str, str]:
    """The submitted file's text and the header it goes under, as the module's tests write it."""
    from tests.grader.test_ex8_3 import fill_stub
    from tests.support.grading import HEADER

    if isinstance(body, dict):
        return fill_stub(exercise, body), ""
    return body, getattr(module, "HEADER", HEADER)


def part_feedback(record, result, part_name: str) -> list[str]:
    """The lines `grader check` prints under the part's own line (no --verbose)."""
    from grader.report import render

    lines = render(record, result, color=False).splitlines()
    start = next(i for i, line in enumerate(lines) if line[4:].startswith(f"{part_name}  "))
    shown = []
    for line in lines[start + 1 :]:
        if not line.startswith("      "):
            break
        shown.append(line.strip())
    return shown


def full_mark_alternatives(module) -> list[str]:
    """The ALTERNATIVE_* sources the module's test_correct_alternatives_score_full_marks grades
    (others, such as a NumPy version without gradients, are meant to lose points)."""
    source = Path(module.__file__).read_text(encoding="utf-8")
    end = source.find("def test_correct_alternatives_score_full_marks")
    if end < 0:
        return []
    start = source.rfind("@pytest.mark.parametrize(", 0, end)
    return list(dict.fromkeys(re.findall(r"\bALTERNATIVE_\w+", source[start:end])))


def measure(only: list[str], show: bool) -> int:
    from grader.grading import grade
    from grader.records import get_exercise
    from tests.support.grading import submit

    useful, lengths, failed_to_fail = 0, [], []
    total = 0
    alternatives, lost = 0, []
    for exercise, module in planted_modules():
        if only and exercise not in only:
            continue
        record = get_exercise(exercise)
        for part_name, body, mistake, _phrase in module.PLANTED:
            text, header = source_of(exercise, module, body)
            with tempfile.TemporaryDirectory() as folder:
                result = grade(
                    exercise, submit(Path(folder), exercise, text, header), parts=[part_name]
                )
            part = result.part(part_name)
            if part.score:
                failed_to_fail.append((exercise, part_name, mistake))
                continue
            lines = part_feedback(record, result, part_name)
            first = lines[0] if lines else ""
            total += 1
            useful += not BARE.match(first)
            lengths.append(sum(len(line) for line in lines))
            if show:
                print(f"{exercise:>16} {part_name:<24} {first}")
        for name in full_mark_alternatives(module):
            body = getattr(module, name)
            text, header = source_of(exercise, module, body)
            if "tf." in text and "import tensorflow" not in text:
                header += "import tensorflow as tf\n"
            with tempfile.TemporaryDirectory() as folder:
                result = grade(exercise, submit(Path(folder), exercise, text, header))
            alternatives += 1
            if result.score != result.max_score:
                lost.append((exercise, name, result.score, result.max_score))
    print(f"planted mistakes graded: {total}")
    print(f"first line more than 'values differ': {useful}/{total} = {useful / max(total, 1):.0%}")
    print(
        f"median characters a student reads per failed part: {statistics.median(lengths or [0]):g}"
    )
    print(f"correct alternatives graded: {alternatives}, losing points: {len(lost)}")
    for item in lost:
        print(f"  LOST: {item}")
    for item in failed_to_fail:
        print(f"  planted mistake that scored: {item}")
    return 1 if lost else 0


def first_line(record, result) -> tuple[str, str]:
    """(part, first line) a student reads first: under the first part that lost points."""
    for part in record.parts:
        found = result.part(part.name) if hasattr(result, "part") else None
        if found is not None and found.score < found.max_score:
            lines = part_feedback(record, result, part.name)
            return part.name, lines[0] if lines else ""
    return "", ""


def measure_set(directory: Path, show: bool) -> int:
    import json
    import shutil

    from grader.grading import grade
    from grader.i18n import language
    from grader.records import get_exercise

    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    judged_path = directory / "judgments.json"
    judged = json.loads(judged_path.read_text(encoding="utf-8")) if judged_path.exists() else {}
    correct = kept = wrong = lost_all = diagnosed = 0
    verdicts: dict[str, int] = {}
    unjudged, problems, rows = [], [], []
    for entry in manifest:
        record = get_exercise(entry["exercise"])
        with tempfile.TemporaryDirectory() as folder:
            shutil.copy(directory / entry["file"], Path(folder) / record.file)
            result = grade(entry["exercise"], Path(folder))
        if entry["correct"]:
            correct += 1
            kept += result.score == result.max_score
            if result.score != result.max_score:
                problems.append(
                    f"  correct file lost points: {entry['file']} "
                    f"{result.score:g}/{result.max_score:g}"
                )
            continue
        wrong += 1
        # An author names functions and classes; a part may grade several (its targets).
        part_of = {t: p.name for p in record.parts for t in (p.name, *p.targets)}
        broken = list(dict.fromkeys(part_of[n] for n in entry.get("parts", []) if n in part_of))
        lost = [name for name in broken if result.part(name).score < result.part(name).max_score]
        lost_all += bool(broken) and len(lost) == len(broken)
        if not broken:
            problems.append(f"  wrong file naming no graded part: {entry['file']} {entry['parts']}")
        if broken and len(lost) < len(broken):
            problems.append(
                f"  wrong file kept points: {entry['file']} "
                f"(kept {sorted(set(broken) - set(lost))})"
            )
        part, line = first_line(record, result)
        if not line:
            continue
        diagnosed += not BARE.match(line)
        key = f"{entry['file']}\t{line}"
        verdict = judged.get(key)
        if verdict is None:
            unjudged.append(
                {
                    "key": key,
                    "file": entry["file"],
                    "part": part,
                    "first_line": line,
                    "mistake": entry.get("mistake", ""),
                    "when": entry.get("when", ""),
                }
            )
        else:
            verdicts[verdict] = verdicts.get(verdict, 0) + 1
        rows.append((entry["file"], line))
        if show:
            print(f"{entry['file']:<48} {line}")
    (directory / f"unjudged.{language()}.json").write_text(
        json.dumps(unjudged, ensure_ascii=False, indent=1), encoding="utf-8"
    )
    read = sum(1 for _ in rows)
    print(f"set: {directory}")
    print(f"correct files keeping full marks: {kept}/{correct}")
    print(f"wrong files losing every part their mistake breaks: {lost_all}/{wrong}")
    print(
        f"first line a diagnosis beyond 'values differ': {diagnosed}/{read} "
        f"= {diagnosed / max(read, 1):.0%}"
    )
    for verdict in ("right", "vague", "misleading"):
        count = verdicts.get(verdict, 0)
        print(f"first line judged {verdict}: {count}/{read} = {count / max(read, 1):.0%}")
    print(f"first lines not judged yet: {len(unjudged)} (written to unjudged.{language()}.json)")
    for line in problems:
        print(line)
    return 1 if kept < correct else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], help="exercise id (repeatable)")
    parser.add_argument("--show", action="store_true", help="print each first line")
    parser.add_argument("--set", type=Path, help="a folder of submissions with a manifest.json")
    parser.add_argument("--lang", default="en", help="the language of the feedback (en, zh)")
    options = parser.parse_args()
    from grader.i18n import use

    use(options.lang)
    if options.set is not None:
        return measure_set(options.set.resolve(), options.show)
    return measure(options.only, options.show)


if __name__ == "__main__":
    sys.exit(main())
