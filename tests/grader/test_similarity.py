"""The similarity report on the demo class: the planted near-copies (henry's code, renamed and
reordered by ivan) are flagged, no honest pair is, and the stub never counts as shared."""

from __future__ import annotations

import csv

import pytest

from grader.instructor.course.stubs import package_dir
from grader.instructor.course.submissions import discover
from grader.instructor.outputs.gradebook import write_all
from grader.instructor.review import similarity
from grader.records import get_exercise
from tests.support.classbook import write_class

DEMO = package_dir("examples") / "submissions"
STUB = (package_dir("exercises") / "ex8_2.py").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def demo_texts():
    return similarity.read_exercise_files(discover(DEMO), "ex8_2.py")


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    pairs = similarity.write_similarity(
        out, [get_exercise("8-2")], discover(DEMO), package_dir("exercises")
    )
    return out, pairs


def test_the_planted_near_copies_and_no_honest_pair_are_flagged(demo_report, demo_texts):
    _, pairs = demo_report
    assert len(demo_texts) == 11  # every demo student but judy (no notebook JSON), the zip included
    assert [(p.first, p.second) for p in pairs] == [("henry", "ivan")]
    assert pairs[0].score >= similarity.THRESHOLD


def test_renamed_and_reordered_code_is_inside_the_matching_regions(demo_report, demo_texts):
    _, pairs = demo_report
    ivan = demo_texts["ivan"]
    marked = "".join(ivan[start:end] for start, end in pairs[0].second_regions)
    # ivan's own names, in functions he moved: matched although henry calls them otherwise.
    for line in ("projected_q = ops.einsum", "w_transposed = ops.swapaxes", "p_row = ops"):
        assert line in ivan and line in marked
    assert "projected_q" not in demo_texts["henry"]


def test_the_stub_never_counts_as_shared():
    # Two students who handed in the stub untouched, and one who added a line to it.
    answer = "    return float(d) * var_q * var_k\n"
    marker = '    raise NotImplementedError("Exercise 8-2: add up the variances'
    line = next(row for row in STUB.splitlines(keepends=True) if row.startswith(marker))
    texts = {"a": STUB, "b": STUB, "c": STUB.replace(line, answer)}
    pairs, _ = similarity.similar_pairs("8-2", texts, STUB, threshold=0.0)
    assert pairs == []
    # Without the stub as boilerplate, two of the same files are near-identical.
    pairs, _ = similarity.similar_pairs("8-2", {"a": texts["a"], "c": texts["c"]}, "")
    assert [(p.first, p.second) for p in pairs] == [("a", "c")]


def test_csv_and_report_section_show_the_pair_side_by_side(demo_report, tmp_path):
    out, _ = demo_report
    with open(out / similarity.CSV_FILE, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["student_a"], r["student_b"]) for r in rows] == [("henry", "ivan")]
    assert float(rows[0]["score"]) >= similarity.THRESHOLD
    section = similarity.similarity_section(out)
    assert section.count("<pre") == 2 and "<mark>" in section
    assert "<b>henry</b>" in section and "<b>ivan</b>" in section
    # The gradebook's report carries the section.
    write_class(out, {"henry": {"8-2": set()}, "ivan": {"8-2": set()}})
    write_all(out, ["henry", "ivan"], [get_exercise("8-2")])
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "Similar submissions" in report and "<mark>" in report


def test_a_failing_similarity_report_costs_no_grade(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("fingerprinting broke")

    monkeypatch.setattr(similarity, "write_similarity", broken)
    similarity.write_for_batch(tmp_path, [get_exercise("8-2")], discover(DEMO))
    assert "fingerprinting broke" in similarity.similarity_section(tmp_path)
