"""Pictures of attention maps: the worst case is found in the arrays the grader judged, and the
figures show what they must (titles, labelled axes, finite values), rendered to PNG."""

from __future__ import annotations

import io

import numpy as np
import pytest

from grader.engine.protocol import answered
from grader.engine.results import PartResult
from grader.engine.spec import LAYER, Case, Part
from grader.engine.status import RunState, Status
from grader.pictures import (
    PictureCollector,
    at_work_figure,
    comparison_figure,
    png,
    worst_map,
)
from grader.sandbox.processes import Outcome

matplotlib_image = pytest.importorskip("matplotlib.image")
PART = Part("ScaledDotScore", 3, lambda rng, hidden=False: [])


def scores_case(label: str, shape, hidden=False) -> Case:
    return Case("ScaledDotScore", LAYER, label, hidden=hidden)


def reported(outputs: list[np.ndarray]) -> Outcome:
    """What a child's bundle holds once read: one answered case per output."""
    arrays: dict = {}
    cases = [answered(index, output, {}, arrays) for index, output in enumerate(outputs)]
    return Outcome(RunState.FINISHED, 0.1, 0, {"import_error": None, "cases": cases}, arrays)


def expected_outputs(outputs):
    from grader.engine.protocol import read_case_outputs

    return read_case_outputs(reported(outputs), len(outputs))


def planted():
    """Two cases; the student is right on the first and off on map 1 of the second."""
    rng = np.random.default_rng(3)
    want = [rng.standard_normal((2, 3, 5)), rng.standard_normal((3, 4, 6))]
    got = [want[0].copy(), want[1].copy()]
    got[1][1, 2, 3] += 5.0
    got[1][0, 0, 0] += 0.5
    cases = [scores_case("small", (2, 3, 5)), scores_case("B=3 Tq=4 Tk=6", (3, 4, 6))]
    return cases, want, got


def test_the_worst_case_is_the_map_furthest_from_the_reference():
    cases, want, got = planted()
    case, expected, received, index = worst_map(
        cases, expected_outputs(want), expected_outputs(got)
    )
    assert case.label == "B=3 Tq=4 Tk=6" and index == 1
    np.testing.assert_array_equal(received - expected, got[1][1] - want[1][1])


def test_the_comparison_shows_expected_yours_and_the_difference_with_labelled_axes():
    cases, want, got = planted()
    figure = comparison_figure("ScaledDotScore", "B=3 Tq=4 Tk=6", want[1][1], got[1][1], 1)
    panels = [axis for axis in figure.axes if axis.images]
    assert [axis.get_title() for axis in panels] == [
        "expected scores",
        "your scores",
        "yours − expected",
    ]
    for axis in panels:
        assert (axis.get_ylabel(), axis.get_xlabel()) == ("query position i", "key position j")
        values = np.asarray(axis.images[0].get_array())
        assert values.shape == (4, 6) and np.isfinite(values).all()
    np.testing.assert_allclose(panels[2].images[0].get_array(), got[1][1] - want[1][1])
    assert "furthest from the reference (B=3 Tq=4 Tk=6, map 1)" in figure.get_suptitle()
    image = matplotlib_image.imread(io.BytesIO(png(figure)), format="png")
    assert image.shape[:2] == (360, 1150) and np.isfinite(image).all()
    assert image[..., :3].std() > 0.1  # something was drawn, not a blank canvas


def test_a_passing_layer_is_shown_at_work():
    figure = at_work_figure("alignment", "B=2", np.eye(4, 6))
    (axis,) = [axis for axis in figure.axes if axis.images]
    assert axis.get_title().startswith("your alignment at work")
    assert (axis.get_ylabel(), axis.get_xlabel()) == ("decoder step", "source position")
    image = matplotlib_image.imread(io.BytesIO(png(figure)), format="png")
    assert image.shape[:2] == (380, 480)


def collect(status, cases, want, got):
    collector = PictureCollector()
    collector(PART, cases, expected_outputs(want), reported(got), PartResult(PART.name, 3, status))
    return collector.pictures


def test_the_collector_draws_failures_and_successes_but_never_hidden_or_broken_cases():
    cases, want, got = planted()
    (failed,) = collect(Status.FAILED, cases, want, got)
    assert failed.kind == "difference" and failed.png.startswith(b"\x89PNG")
    assert failed.data_uri().startswith("data:image/png;base64,")
    (passed,) = collect(Status.PASSED, cases, want, want)
    assert passed.kind == "at work" and "small" in passed.title
    # Hidden cases keep their expected values to themselves; NaN answers have nothing to draw.
    hidden = [scores_case(c.label, None, hidden=True) for c in cases]
    assert collect(Status.FAILED, hidden, want, got) == []
    assert collect(Status.FAILED, cases, want, [g * np.nan for g in got]) == []
    # A target that is not an attention map is never drawn.
    other = [Case("softmax_jacobian", "function", "x") for _ in cases]
    assert collect(Status.FAILED, other, want, got) == []


def test_without_matplotlib_there_are_no_pictures_and_no_error(monkeypatch):
    import grader.pictures

    monkeypatch.setattr(grader.pictures, "available", lambda: False)
    cases, want, got = planted()
    assert collect(Status.FAILED, cases, want, got) == []


@pytest.mark.ex8_2
def test_check_writes_one_self_contained_page_with_the_pictures(tmp_path):
    import base64
    import re

    from click.testing import CliRunner

    from grader.cli import main
    from grader.instructor.stubs import package_dir

    bob = package_dir("examples") / "submissions" / "bob"
    target = tmp_path / "report.html"
    done = CliRunner().invoke(
        main, ["check", "8-2", "--submission", str(bob), "--html", str(target)]
    )
    assert done.exit_code == 1, done.output
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page and "http" not in page
    assert "the 1/√d scale is missing" in page and "Score: 6/10" in page
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 2  # ScaledDotScore's worst case; BilinearScore at work
    shapes = [matplotlib_image.imread(io.BytesIO(base64.b64decode(i)), "png").shape for i in images]
    assert shapes[0][:2] == (360, 1150)


def test_a_pictures_alt_text_is_in_the_students_language_its_drawing_stays_english():
    from grader.i18n import speaking

    cases, want, got = planted()
    with speaking("en"):
        (english,) = collect(Status.FAILED, cases, want, got)
    with speaking("zh"):
        (chinese,) = collect(Status.FAILED, cases, want, got)
        (at_work,) = collect(Status.PASSED, cases, want, want)
    assert english.title == (
        "ScaledDotScore: the case furthest from the reference (B=3 Tq=4 Tk=6, map 1)"
    )
    assert chinese.title == "ScaledDotScore：与参考答案相差最大的用例（B=3 Tq=4 Tk=6，第 1 张图）"
    assert at_work.title == "你的 ScaledDotScore 的实际效果：打分，small"
    # The same drawing in both languages (its words are English: no CJK font is needed).
    assert chinese.png == english.png
