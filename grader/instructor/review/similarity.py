"""Pairs of students whose exercise code is unusually alike: for the instructor's eyes, never a
grade.

Fingerprinting is copydetect's (MOSS-style winnowing over Pygments tokens): names become one
letter, comments, whitespace and string contents vanish, so renamed variables and rewritten
comments do not hide a copy, and winnowing is local, so reordered functions do not either. Two
kinds of code never count as shared:

- the stub's own code (its docstrings, signatures, given lines): copydetect's boilerplate;
- passages found in many submissions (more than `common_share` of the class, at least three
  students): short correct answers converge, and code half the class has is no pair's secret.
  MOSS does the same (its `-m` option).

A pair is flagged when either student's remaining code is at least `threshold` covered by the
other's, and they share at least MIN_OVERLAP characters of it. Nothing here runs submitted
code: files are unpacked (grader.instructor.course.submissions) and read as text.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.engine.safe_files import read_plain_path
from grader.instructor.course.submissions import (
    Student,
    UnsafeSubmission,
    find_exercise_file,
    unpack,
)
from grader.instructor.files import atomic_write
from grader.vocabulary import untrusted

# copydetect's defaults: matches shorter than NOISE characters of filtered code are ignored;
# every match of GUARANTEE characters or more is found (the winnowing window follows).
NOISE = 25
GUARANTEE = 25
THRESHOLD = 0.6
# ...and the two share at least this many characters of filtered code: a share of a tiny
# remainder (a student who wrote two lines) says nothing.
MIN_OVERLAP = 100
COMMON_SHARE = 0.25
MAX_CHARS = 200_000  # a longer file is cut: a fingerprint of its start is enough to compare
RESULT_FILE = "similarity.json"
CSV_FILE = "similarity.csv"


def escape(text) -> str:
    """For the report: cleaned and escaped (code and ids come from students)."""
    return untrusted.html(text, MAX_CHARS)


@dataclass
class Pair:
    exercise: str
    first: str
    second: str
    # The share of each student's own (non-stub, non-common) code found in the other's.
    first_share: float
    second_share: float
    # Matching regions, (start, end) character offsets into each student's file.
    first_regions: list[tuple[int, int]]
    second_regions: list[tuple[int, int]]
    overlap: int = 0  # characters of filtered code in common

    @property
    def score(self) -> float:
        return max(self.first_share, self.second_share)


def read_exercise_files(students: list[Student], filename: str) -> dict[str, str]:
    """Student id -> the text of their file `filename`, for those who have exactly one."""
    texts = {}
    scratch = Path(tempfile.mkdtemp(prefix="attnkit-similarity-"))
    try:
        for number, student in enumerate(students):
            home = scratch / f"s{number}"
            try:
                refused = unpack(student, home)
            except UnsafeSubmission:
                continue  # the batch flags it; there is nothing to compare
            found = find_exercise_file(home, filename, refused)
            if found.path is not None:  # a plain file of the grader's own copy
                text = read_plain_path(found.path).decode("utf-8", errors="replace")
                texts[student.id] = text[:MAX_CHARS]
            shutil.rmtree(home, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return texts


def _fingerprint(text: str, boilerplate):
    from copydetect import CodeFingerprint

    window = GUARANTEE - NOISE + 1
    # The name only tells Pygments the language; the code comes from `fp`.
    return CodeFingerprint("code.py", NOISE, window, boilerplate, fp=io.StringIO(text))


def similar_pairs(
    exercise: str,
    texts: dict[str, str],
    stub: str,
    threshold: float = THRESHOLD,
    common_share: float = COMMON_SHARE,
) -> tuple[list[Pair], int]:
    """Every pair at or above `threshold`, most alike first, and the number of passages left out
    because too many students share them."""
    from copydetect import compare_files

    stub_hashes = sorted(_fingerprint(stub, None).hashes)
    first_pass = {s: _fingerprint(t, stub_hashes).hashes for s, t in texts.items()}
    counts = Counter(h for hashes in first_pass.values() for h in hashes)
    most = max(2, math.floor(common_share * len(texts)))
    common = sorted(h for h, count in counts.items() if count > most)
    ignored = sorted(set(stub_hashes) | set(common))
    prints = {s: _fingerprint(t, ignored) for s, t in sorted(texts.items())}
    pairs = []
    students = list(prints)
    for i, first in enumerate(students):
        for second in students[i + 1 :]:
            overlap, shares, slices = compare_files(prints[first], prints[second])
            pair = Pair(
                exercise,
                first,
                second,
                round(float(shares[0]), 3),
                round(float(shares[1]), 3),
                _regions(slices[0]),
                _regions(slices[1]),
                int(overlap),
            )
            if pair.score >= threshold and pair.overlap >= MIN_OVERLAP:
                pairs.append(pair)
    pairs.sort(key=lambda p: (-p.score, p.first, p.second))
    return pairs, len(common)


def _regions(slices) -> list[tuple[int, int]]:
    if len(slices) == 0 or len(slices[0]) == 0:
        return []
    return [(int(start), int(end)) for start, end in zip(slices[0], slices[1], strict=True)]


def write_similarity(out: Path, records, students: list[Student], stub_dir: Path, **options):
    """similarity.json (for the report) and similarity.csv, over every exercise of the batch."""
    found, files = [], {}
    common = {}
    for record in records:
        texts = read_exercise_files(students, record.file)
        stub = (stub_dir / record.file).read_text(encoding="utf-8")
        pairs, common[record.id] = similar_pairs(record.id, texts, stub, **options)
        found += pairs
        for pair in pairs:
            files.setdefault(record.id, {})[pair.first] = texts[pair.first]
            files[record.id][pair.second] = texts[pair.second]
    document = {
        "threshold": options.get("threshold", THRESHOLD),
        "common_share": options.get("common_share", COMMON_SHARE),
        "common_passages": common,
        "pairs": [asdict(p) for p in found],
        "files": files,
    }
    atomic_write(Path(out) / RESULT_FILE, untrusted.json_text(document))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["exercise", "student_a", "student_b", "share_a", "share_b", "score"])
    for p in found:
        writer.writerow(
            untrusted.csv_row(
                [p.exercise, p.first, p.second, p.first_share, p.second_share, f"{p.score:.3f}"]
            )
        )
    atomic_write(Path(out) / CSV_FILE, buffer.getvalue())
    return found


def write_for_batch(out: Path, records, students: list[Student], **options) -> None:
    """The batch's hook: the report is the instructor's extra, so a failure of it is told in the
    report and costs no grade."""
    from grader.instructor.course.stubs import package_dir

    try:
        write_similarity(out, records, students, package_dir("exercises"), **options)
    except Exception as error:  # noqa: BLE001 - never lose a batch's grades to this report
        text = json.dumps({"error": f"{type(error).__name__}: {error}"})
        atomic_write(Path(out) / RESULT_FILE, text)


def _marked(text: str, regions) -> str:
    """The file as HTML with its matching regions in <mark>."""
    pieces, at = [], 0
    for start, end in regions:
        pieces += [escape(text[at:start]), "<mark>", escape(text[start:end]), "</mark>"]
        at = end
    pieces.append(escape(text[at:]))
    return "".join(pieces)


def similarity_section(out: Path) -> str:
    """The report's section: each flagged pair, its score, and both files side by side with
    the matching regions marked. Empty when the batch made no similarity report."""
    try:
        document = json.loads((Path(out) / RESULT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    if "error" in document:
        return (
            "<h2>Similar submissions</h2><p class=flag>The similarity report failed: "
            f"{escape(document['error'])}</p>"
        )
    head = (
        "<h2>Similar submissions</h2><p class=muted>For the instructor only, never a grade. "
        f"Pairs where either student's code is at least {document['threshold']:.0%} covered by "
        "the other's, after names, comments and whitespace are ignored; the stub's code and "
        f"passages shared by more than {document['common_share']:.0%} of the class never "
        f"count. Also in {CSV_FILE}.</p>"
    )
    if not document["pairs"]:
        return head + "<p class=muted>none</p>"
    parts = [head]
    for pair in document["pairs"]:
        files = document["files"][pair["exercise"]]
        first, second = pair["first"], pair["second"]
        parts.append(
            f"<details><summary>{escape(pair['exercise'])}: <b>{escape(first)}</b> "
            f"{pair['first_share']:.0%} · <b>{escape(second)}</b> {pair['second_share']:.0%}"
            "</summary><div style='display:flex;gap:1rem'>"
            + "".join(
                f"<pre style='flex:1;overflow:auto;font-size:12px'>{escape(name)}\n"
                f"{_marked(files[name], regions)}</pre>"
                for name, regions in (
                    (first, pair["first_regions"]),
                    (second, pair["second_regions"]),
                )
            )
            + "</div></details>"
        )
    return "".join(parts)
