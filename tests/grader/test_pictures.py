"""Pictures of attention maps: the worst case is found in the arrays the grader judged, and the
figures show what they must (titles, labelled axes, finite values), rendered to PNG."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.engine.feedback import part_lines
from grader.engine.judging import judge_part
from grader.engine.results import PartResult
from grader.pictures import (
    DPI,
    LABEL_POINTS,
    MOST_CELLS,
    PictureCollector,
    at_work_figure,
    comparison_figure,
    on_a_grid,
    png,
    worst_map,
)
from grader.vocabulary.protocol import Outcome, answered
from grader.vocabulary.spec import LAYER, Case, Part
from grader.vocabulary.status import RunState, Status

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
    from grader.vocabulary.protocol import read_case_outputs

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
    found = worst_map(cases, expected_outputs(want), expected_outputs(got))
    assert found.case.label == "B=3 Tq=4 Tk=6" and found.index == 1
    assert found.cell == (2, 3) and found.element == (1, 2, 3)
    np.testing.assert_array_equal(found.received - found.expected, got[1][1] - want[1][1])


def test_the_comparison_shows_expected_yours_and_the_difference_with_labelled_axes():
    cases, want, got = planted()
    figure = comparison_figure(
        "ScaledDotScore", "B=3 Tq=4 Tk=6", want[1][1], got[1][1], 1, (2, 3), (1, 2, 3)
    )
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
    assert "the text names (B=3 Tq=4 Tk=6, map 1), its element [1, 2, 3]" in figure.get_suptitle()
    image = matplotlib_image.imread(io.BytesIO(png(figure)), format="png")
    assert image.shape[1] <= 1050 and np.isfinite(image).all()
    assert image[..., :3].std() > 0.1  # something was drawn, not a blank canvas


def test_a_passing_layer_is_shown_at_work():
    figure = at_work_figure("alignment", "B=2", np.eye(4, 6))
    (axis,) = [axis for axis in figure.axes if axis.images]
    assert axis.get_title().startswith("your alignment at work")
    assert (axis.get_ylabel(), axis.get_xlabel()) == ("decoder step", "source position")
    image = matplotlib_image.imread(io.BytesIO(png(figure)), format="png")
    assert 300 <= image.shape[1] <= 700


def collect(status, cases, want, got, judged=None):
    collector = PictureCollector()
    judged = judged or PartResult(PART.name, 3, status)
    collector(PART, cases, expected_outputs(want), reported(got), judged)
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


def test_a_class_that_draws_the_same_map_draws_it_once(monkeypatch):
    """Answers that differ only in their last bits (a sum taken in another order) are one
    picture, drawn once, for passed and failed parts alike; another map is drawn anew."""
    import grader.pictures

    drawn = []
    for name in ("at_work_figure", "comparison_figure"):
        real = getattr(grader.pictures, name)

        def counted(*arguments, real=real):
            drawn.append(real.__name__)
            return real(*arguments)

        counted.__name__ = real.__name__
        monkeypatch.setattr(grader.pictures, name, counted)
    monkeypatch.setattr(grader.pictures, "_drawn", type(grader.pictures._drawn)())
    cases, want, got = planted()
    rounded_otherwise = [w * (1 + 2.0**-52) for w in want]
    first, again = (
        collect(Status.PASSED, cases, want, want),
        collect(Status.PASSED, cases, want, rounded_otherwise),
    )
    assert first[0].png == again[0].png and drawn == ["at_work_figure"]
    failed = collect(Status.FAILED, cases, want, got)
    failed_again = collect(
        Status.FAILED, cases, rounded_otherwise, [g * (1 + 2.0**-52) for g in got]
    )
    assert failed[0].png == failed_again[0].png
    assert drawn == ["at_work_figure", "comparison_figure"]
    collect(Status.PASSED, cases, want, [w + 0.01 for w in want])
    assert drawn == ["at_work_figure", "comparison_figure", "at_work_figure"]


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=20),
    st.integers(-40, 40),
)
def test_the_grid_moves_no_value_by_more_than_a_billionth_of_the_largest(values, exponent):
    array = np.asarray(values) * 2.0**exponent
    (rounded,) = on_a_grid(array)
    reach = np.abs(array).max()
    assert np.all(np.abs(rounded - array) <= reach * 2.0**-30)


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
    from grader.instructor.course.stubs import package_dir

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
    assert shapes[0][1] <= 1050
    # The picture's case and element are those the text names first.
    (_, text_case, text_index) = re.search(
        r"\[(output, (B=\S+ Tq=\S+ Tk=\S+ d=\S+)): at index (\[[\d, ]+\])", page
    ).groups()
    titles = re.findall(r'alt="(ScaledDotScore: [^"]*)"', page)
    batch = int(text_index.strip("[]").split(",")[0])  # the map of a (B, Tq, Tk) output
    where = f", map {batch}" if batch else ""
    assert titles == [
        f"ScaledDotScore: the case the text names ({text_case}{where}), its element {text_index} "
        "outlined"
    ]


def test_a_pictures_alt_text_is_in_the_students_language_its_drawing_stays_english():
    from grader.i18n import speaking

    cases, want, got = planted()
    with speaking("en"):
        (english,) = collect(Status.FAILED, cases, want, got)
    with speaking("zh"):
        (chinese,) = collect(Status.FAILED, cases, want, got)
        (at_work,) = collect(Status.PASSED, cases, want, want)
    assert english.title == (
        "ScaledDotScore: the case the text names (B=3 Tq=4 Tk=6, map 1), its element [1, 2, 3] "
        "outlined"
    )
    assert chinese.title == (
        "ScaledDotScore：文字所指的用例（B=3 Tq=4 Tk=6，第 1 张图），红框标出元素 [1, 2, 3]"
    )
    assert at_work.title == "你的 ScaledDotScore 的实际效果：打分，small"
    # The same drawing in both languages (its words are English: no CJK font is needed).
    assert chinese.png == english.png


def test_the_picture_shows_the_case_and_element_the_text_names_not_the_largest_gap():
    """The text leads with the first case that differs; the largest gap is in another case.
    The picture must show the text's case, map and element."""
    rng = np.random.default_rng(5)
    want = [rng.standard_normal((2, 3, 5)), rng.standard_normal((3, 4, 6))]
    got = [want[0].copy(), want[1].copy()]
    got[0][1, 2, 4] += 0.5  # named by the text: its case comes first
    got[1][2, 3, 5] += 50.0  # the largest gap of all
    cases = [scores_case("B=2 Tq=3 Tk=5", None), scores_case("B=3 Tq=4 Tk=6", None)]
    judged = judge_part(PART, cases, expected_outputs(want), reported(got), 10.0)
    text = part_lines(judged, width=200)[0]
    assert "B=2 Tq=3 Tk=5: at index [1, 2, 4]" in text, text
    (picture,) = collect(Status.FAILED, cases, want, got, judged)
    assert picture.title == (
        "ScaledDotScore: the case the text names (B=2 Tq=3 Tk=5, map 1), its element "
        "[1, 2, 4] outlined"
    )


def _overlap(boxes) -> bool:
    boxes = sorted(boxes, key=lambda box: (box.x0, box.y0))
    return any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


@given(
    rows=st.integers(1, 400),
    columns=st.integers(1, 400),
    at=st.tuples(st.floats(0, 0.999), st.floats(0, 0.999)),
    failed=st.booleans(),
)
@settings(max_examples=12, deadline=None)
def test_any_map_is_drawn_legibly_and_shows_the_element_named(rows, columns, at, failed):
    """Whatever the map's shape: the figure fits a notebook's width unscaled, tick labels are at
    least LABEL_POINTS and never touch, a cell is never squeezed below a label's height, a large
    map is summarised by a window around the named element, and the ticks are its own indices."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.patches import Rectangle

    cell = (int(at[0] * rows), int(at[1] * columns))
    expected = np.arange(rows * columns, dtype=float).reshape(rows, columns)
    received = expected.copy()
    received[cell] += 1.0
    if failed:
        figure = comparison_figure("ScaledDotScore", "x", expected, received, 0, cell, cell)
    else:
        figure = at_work_figure("ScaledDotScore", "x", received)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    assert figure.get_figwidth() * DPI <= 1050
    for axis in [axis for axis in figure.axes if axis.images]:
        shown_rows, shown_columns = axis.images[0].get_array().shape
        assert shown_rows == min(rows, MOST_CELLS) and shown_columns == min(columns, MOST_CELLS)
        box = axis.get_window_extent(renderer)
        assert box.height / shown_rows >= LABEL_POINTS * DPI / 72  # a row holds a label
        assert box.width / shown_columns >= LABEL_POINTS * DPI / 72
        for labels in (axis.get_xticklabels(), axis.get_yticklabels()):
            shown = [label for label in labels if label.get_text()]
            assert shown and all(label.get_fontsize() >= LABEL_POINTS for label in shown)
            assert not _overlap([label.get_window_extent(renderer) for label in shown])
        first_row = int(axis.get_yticklabels()[0].get_text()) - int(axis.get_yticks()[0])
        first_column = int(axis.get_xticklabels()[0].get_text()) - int(axis.get_xticks()[0])
        if failed:
            (outline,) = [patch for patch in axis.patches if isinstance(patch, Rectangle)]
            x, y = outline.get_xy()
            assert (first_row + y + 0.5, first_column + x + 0.5) == cell
