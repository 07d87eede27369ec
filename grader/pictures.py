"""Pictures of attention: the reference's weights (or scores), a student's, and their difference.

Drawn in the grader's own process from the float64 arrays a child reported and the grader has
already read and judged (grader.vocabulary.protocol): nothing a submission produced is unpickled or
run here. matplotlib (the `viz` extra) is imported only when a picture is drawn, through its
object API (no pyplot, so a notebook's own plotting backend is left alone); without it the
grader grades the same and shows no pictures.

Which outputs are attention maps is an allowlist (`MAPS`): an output of shape (..., queries,
keys) is drawn only for the targets named there, with their axes' names.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from grader.engine import compare
from grader.engine.feedback import first_problem
from grader.i18n import N_, _, tr
from grader.vocabulary.labels import shown_label
from grader.vocabulary.protocol import read_case_outputs
from grader.vocabulary.status import CaseStatus, Status

QUERY, KEY = "query position i", "key position j"
# target -> (what its output is, the name of the row axis, the name of the column axis)
# The words of the titles are marked for the catalog: a picture's alt text is in the student's
# language, its drawing stays English (a machine may have no CJK font).
MAPS = {
    "ScaledDotScore": (N_("scores"), QUERY, KEY),
    "BilinearScore": (N_("scores"), QUERY, KEY),
    "AdditiveScore": (N_("scores"), QUERY, KEY),
    "alignment": (N_("alignment weights"), "decoder step", "source position"),
    "masked_softmax": (N_("attention weights"), QUERY, KEY),
    "masked_softmax_from_mask": (N_("attention weights"), QUERY, KEY),
    "local_p_weights": (N_("attention weights"), QUERY, "source position"),
    "gaussian_weights": (N_("attention weights"), QUERY, KEY),
    "PointerScores": (N_("pointer scores"), "output step", "input position"),
}
COMPARISON_TITLE = N_(
    "{target}: the case the text names ({label}{where}), its element {element} outlined"
)
MAP_INDEX = N_(", map {index}")
AT_WORK_TITLE = N_("your {target} at work:\n{what}, {label}")
# Larger maps are summarised: a window of this many rows and columns around the element the text
# names (top-left when none is named), its ticks the map's own indices. A picture is for
# reading, cell by cell.
MOST_CELLS = 24
# Sizes, in inches at DPI: a cell keeps room for its tick label, a panel for its colour bar and
# axis labels; no figure is wider than a notebook's cell shows unscaled (scaled down, its labels
# would shrink below the size set here).
DPI = 100
CELL = 0.2
LABEL_POINTS = 8
MOST_WIDTH = 10.5
PANEL_EXTRA_WIDTH, PANEL_EXTRA_HEIGHT = 1.6, 1.3
SMALLEST_PANEL = 1.6
# Drawn pictures are kept, keyed by everything their drawing depends on: in a class most
# students' layers are right and draw the same map (and many wrong ones make the same mistake),
# and drawing one takes a third of a second. Values are rounded to a grid of 2**-GRID_BITS of
# their largest magnitude (a power of two: the rounding is exact), far below what a colour or a
# colour bar's label shows, so answers computed in another order, which differ in their last
# bits, are the same picture.
MOST_KEPT = 256
GRID_BITS = 30


@dataclass(frozen=True)
class Picture:
    part: str
    title: str
    png: bytes
    # "difference": expected, yours and the difference; "at work": yours, after the part passed.
    kind: str

    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class NamedMap:
    """The 2-D slice of one case's output that a picture shows, and the element it outlines."""

    case: object  # grader.vocabulary.spec.Case
    expected: np.ndarray
    received: np.ndarray
    index: int  # which map of the case's output (its leading axes, flattened)
    cell: tuple[int, int]  # (row, column) of the outlined element in that map
    element: tuple[int, ...]  # the same element's index in the whole output, as the text says


def named_map(cases, expected, received, check) -> NamedMap | None:
    """The map of the case that `check` (the text's first problem) checked, with the element
    the text names: the one furthest from the reference among those outside the tolerance, as
    grader.engine.compare finds it. None when that case's output is no map to draw (hidden, of
    the wrong shape, not finite) or is right (the problem is elsewhere: a gradient)."""
    if check is None or check.case is None or not 0 <= check.case < len(cases):
        return None
    case, want, got = cases[check.case], expected[check.case], received[check.case]
    pair = _map_pair(case, want, got)
    if pair is None:
        return None
    want_maps, got_maps = pair
    ok = compare.close(want_maps, got_maps, case)
    if ok.all():
        return None
    gaps = np.where(ok, -1.0, np.abs(got_maps - want_maps))
    index, row, column = (int(i) for i in np.unravel_index(int(np.argmax(gaps)), gaps.shape))
    shape = np.shape(want.output)
    flat = index * want_maps.shape[1] * want_maps.shape[2] + row * want_maps.shape[2] + column
    element = tuple(int(i) for i in np.unravel_index(flat, shape))
    return NamedMap(case, want_maps[index], got_maps[index], index, (row, column), element)


def worst_map(cases, expected, received) -> NamedMap | None:
    """Among the public cases whose output is an attention map, the one and the 2-D slice where
    the student's answer is furthest from the reference, or None when no such case has a finite
    answer of the right shape. For a problem that names no case (a relation between cases)."""
    worst, found = -1.0, None
    for number, (case, want, got) in enumerate(zip(cases, expected, received, strict=True)):
        pair = _map_pair(case, want, got)
        if pair is None:
            continue
        want_maps, got_maps = pair
        gaps = np.max(np.abs(got_maps - want_maps), axis=(-2, -1))
        index = int(np.argmax(gaps))
        if gaps[index] > worst:
            worst, found = float(gaps[index]), number
    if found is None:
        return None
    return named_map(cases, expected, received, _CaseOnly(found))


@dataclass(frozen=True)
class _CaseOnly:
    case: int


def example_map(cases, received):
    """The student's map on a small public case, to show their layer at work: the first whose
    map has at least 3 rows and 3 columns, else the largest."""
    largest = None
    for case, got in zip(cases, received, strict=True):
        pair = _map_pair(case, got, got)
        if pair is None:
            continue
        one = pair[1][0]
        if min(one.shape) >= 3:
            return case, one
        if largest is None or one.size > largest[1].size:
            largest = (case, one)
    return largest


def _map_pair(case, want, got):
    if case.target not in MAPS or case.hidden or got.status != CaseStatus.OK:
        return None
    if want.output is None or got.output is None:
        return None
    want_array = np.asarray(want.output, dtype=np.float64)
    got_array = np.asarray(got.output, dtype=np.float64)
    if want_array.ndim < 2 or got_array.shape != want_array.shape or want_array.size == 0:
        return None
    if not (np.isfinite(got_array).all() and np.isfinite(want_array).all()):
        return None
    rows, columns = want_array.shape[-2:]
    flat = (-1, rows, columns)
    return want_array.reshape(flat), got_array.reshape(flat)


def comparison_figure(target, label, expected, received, index, cell=(0, 0), element=None):
    """Three heatmaps: the reference's map, the student's, and student minus reference, with
    the element at `cell` (row, column) outlined; side by side where they fit a notebook's
    width, else one above the other."""
    from matplotlib.figure import Figure

    what, rows, columns = MAPS[target]
    full = expected.shape
    window = _window(full, cell)
    expected, received = expected[window], received[window]
    width, height = _panel_size(expected.shape)
    across = 3 * width <= MOST_WIDTH
    size = (3 * width, height + 0.5) if across else (width, 3 * height + 0.5)
    figure = Figure(figsize=size, dpi=DPI, layout="constrained")
    axes = figure.subplots(1, 3) if across else figure.subplots(3, 1)
    low = min(expected.min(), received.min())
    high = max(expected.max(), received.max(), low + 1e-12)
    difference = received - expected
    reach = max(float(np.abs(difference).max()), 1e-12)
    panels = (
        (f"expected {what}", expected, "viridis", low, high),
        (f"your {what}", received, "viridis", low, high),
        ("yours − expected", difference, "RdBu_r", -reach, reach),
    )
    for axis, (title, values, colours, vmin, vmax) in zip(axes, panels, strict=True):
        image = axis.imshow(values, cmap=colours, vmin=vmin, vmax=vmax, aspect="auto")
        axis.set_title(title, fontsize=LABEL_POINTS + 1)
        _label(axis, window, full, rows, columns)
        _outline(axis, cell[0] - window[0].start, cell[1] - window[1].start)
        bar = figure.colorbar(image, ax=axis, shrink=0.85)
        bar.ax.tick_params(labelsize=LABEL_POINTS)
    where = MAP_INDEX.format(index=index) if index else ""
    shown = list(element) if element is not None else list(cell)
    figure.suptitle(
        COMPARISON_TITLE.format(target=target, label=label, where=where, element=shown),
        fontsize=LABEL_POINTS + 2,
        wrap=True,
    )
    return figure


def at_work_figure(target, label, values):
    """One heatmap of the student's map on a small case."""
    from matplotlib.figure import Figure

    what, rows, columns = MAPS[target]
    full = values.shape
    window = _window(full, (0, 0))
    values = values[window]
    width, height = _panel_size(values.shape)
    figure = Figure(figsize=(max(width, 3.2), height + 0.4), dpi=DPI, layout="constrained")
    axis = figure.subplots()
    image = axis.imshow(values, cmap="viridis", aspect="auto")
    axis.set_title(
        AT_WORK_TITLE.format(target=target, what=what, label=label), fontsize=LABEL_POINTS + 1
    )
    _label(axis, window, full, rows, columns)
    bar = figure.colorbar(image, ax=axis, shrink=0.85)
    bar.ax.tick_params(labelsize=LABEL_POINTS)
    return figure


def png(figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    return buffer.getvalue()


def _window(shape, cell) -> tuple[slice, slice]:
    """At most MOST_CELLS rows and columns of a map of `shape`, around `cell`."""

    def around(size, at):
        start = min(max(0, at - MOST_CELLS // 2), max(0, size - MOST_CELLS))
        return slice(start, min(size, start + MOST_CELLS))

    return around(shape[0], cell[0]), around(shape[1], cell[1])


def _panel_size(shape) -> tuple[float, float]:
    """A panel's inches for a (shown) map of `shape`: CELL per cell, within bounds."""
    rows, columns = shape
    width = max(SMALLEST_PANEL, CELL * columns) + PANEL_EXTRA_WIDTH
    height = max(SMALLEST_PANEL * 0.75, CELL * rows) + PANEL_EXTRA_HEIGHT
    return width, height


def _tick_step(count: int, largest: int, points_per_cell: float, across: bool) -> int:
    """Every how many cells a tick label fits without touching the next one."""
    digits = len(str(max(largest, 0)))
    # A digit is about 0.6 of the font size wide; a label's height is the font size.
    needed = (0.6 * digits * LABEL_POINTS if across else LABEL_POINTS) + 3
    for step in (1, 2, 5, 10, 20, 50, 100):
        if step * points_per_cell >= needed or step >= count:
            return step
    return 100


def _label(axis, window, full, rows, columns) -> None:
    """Axis names (with the part shown, for a window of a larger map), and tick labels at the
    map's own indices, as many as fit at a readable size."""
    for span, size, name, across in (
        (window[1], full[1], columns, True),
        (window[0], full[0], rows, False),
    ):
        count = span.stop - span.start
        if count < size:
            name += f" ({span.start}–{span.stop - 1} of 0–{size - 1})"
        inches = max(CELL * count, SMALLEST_PANEL * (1 if across else 0.75))
        step = _tick_step(count, span.stop - 1, 72 * inches / count, across)
        positions = list(range((-span.start) % step, count, step))
        labels = [str(span.start + p) for p in positions]
        if across:
            axis.set_xlabel(name, fontsize=LABEL_POINTS + 1)
            axis.set_xticks(positions, labels)
        else:
            axis.set_ylabel(name, fontsize=LABEL_POINTS + 1)
            axis.set_yticks(positions, labels)
    axis.tick_params(labelsize=LABEL_POINTS)


def _outline(axis, row: int, column: int) -> None:
    from matplotlib.patches import Rectangle

    axis.add_patch(
        Rectangle((column - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=1.8)
    )


_drawn: OrderedDict[bytes, bytes] = OrderedDict()


def on_a_grid(*arrays: np.ndarray) -> list[np.ndarray]:
    """The arrays rounded to one grid of 2**-GRID_BITS of their largest magnitude (rounded up to
    a power of two)."""
    reach = max((float(np.abs(a).max()) for a in arrays if a.size), default=0.0)
    step = math.ldexp(1.0, math.ceil(math.log2(reach)) - GRID_BITS) if reach else 0.0
    if not step:  # all zero, or too small for a grid of floats: nothing to round
        return [np.asarray(a, dtype=np.float64) for a in arrays]
    return [np.round(np.asarray(a, dtype=np.float64) / step) * step for a in arrays]


def _drawing_key(*parts) -> bytes:
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            digest.update(repr((part.shape, part.dtype.str)).encode())
            digest.update(np.ascontiguousarray(part).tobytes())
        else:
            digest.update(repr(part).encode())
        digest.update(b"\0")
    return digest.digest()


def drawn_once(draw, *arguments) -> bytes:
    """The PNG of `draw(*arguments)`, drawn the first time these arguments come (the last
    MOST_KEPT are kept)."""
    key = _drawing_key(draw.__name__, *arguments)
    picture = _drawn.get(key)
    if picture is not None:
        with contextlib.suppress(KeyError):  # dropped meanwhile by another thread's drawing
            _drawn.move_to_end(key)
        return picture
    picture = png(draw(*arguments))
    _drawn[key] = picture
    while len(_drawn) > MOST_KEPT:
        with contextlib.suppress(KeyError):
            _drawn.popitem(last=False)
    return picture


class PictureCollector:
    """`observe` for grader.grading.grade: a picture for each part that has a map to
    show: when it failed, of the case and element its text names first (of the case furthest
    from the reference where that problem names no case; none where the named case has no map
    to draw, rather than another case than the text's); when it passed, of the student's layer
    at work."""

    def __init__(self):
        self.pictures: list[Picture] = []

    def __call__(self, part, cases, expected, outcome, judged) -> None:
        if not any(target in MAPS for target in part.targets) or not available():
            return
        try:
            received = read_case_outputs(outcome, len(cases))
        except Exception:  # noqa: BLE001 - no readable answers: the checks already say why
            return
        if judged.status == Status.PASSED:
            found = example_map(cases, received)
            if found is not None:
                case, values = found
                (values,) = on_a_grid(values)
                drawn = drawn_once(at_work_figure, case.target, case.label, values)
                title = _(
                    AT_WORK_TITLE,
                    target=case.target,
                    what=tr(MAPS[case.target][0]),
                    label=shown_label(case.label),
                )
                alt = title.replace("\n", " ")
                self.pictures.append(Picture(part.name, alt, drawn, "at work"))
            return
        named = first_problem(judged)
        if named is not None and named.case is not None:
            found = named_map(cases, expected, received, named)
        else:
            found = worst_map(cases, expected, received)
        if found is not None:
            case = found.case
            drawn = drawn_once(
                comparison_figure,
                case.target,
                case.label,
                *on_a_grid(found.expected, found.received),
                found.index,
                found.cell,
                found.element,
            )
            where = _(MAP_INDEX, index=found.index) if found.index else ""
            title = _(
                COMPARISON_TITLE,
                target=case.target,
                label=shown_label(case.label),
                where=where,
                element=list(found.element),
            )
            self.pictures.append(Picture(part.name, title, drawn, "difference"))

    def of(self, part_name: str) -> list[Picture]:
        return [picture for picture in self.pictures if picture.part == part_name]
