"""Pictures of attention: the reference's weights (or scores), a student's, and their difference.

Drawn in the grader's own process from the float64 arrays a child reported and the grader has
already read and judged (grader.engine.protocol): nothing a submission produced is unpickled or
run here. matplotlib (the `viz` extra) is imported only when a picture is drawn, through its
object API (no pyplot, so a notebook's own plotting backend is left alone); without it the
grader grades the same and shows no pictures.

Which outputs are attention maps is an allowlist (`MAPS`): an output of shape (..., queries,
keys) is drawn only for the targets named there, with their axes' names.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

import numpy as np

from grader.engine.labels import shown_label
from grader.engine.protocol import read_case_outputs
from grader.engine.status import CaseStatus, Status
from grader.i18n import N_, _, tr

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
COMPARISON_TITLE = N_("{target}: the case furthest from the reference ({label}{where})")
MAP_INDEX = N_(", map {index}")
AT_WORK_TITLE = N_("your {target} at work:\n{what}, {label}")
# Larger maps are cropped to their top-left corner: a picture is for reading, cell by cell.
MOST_CELLS = 24


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


def worst_map(cases, expected, received):
    """Among the public cases whose output is an attention map, the one and the 2-D slice where
    the student's answer is furthest from the reference: (case, expected 2-D, received 2-D,
    leading index), or None when no such case has a finite answer of the right shape."""
    worst, found = -1.0, None
    for case, want, got in zip(cases, expected, received, strict=True):
        pair = _map_pair(case, want, got)
        if pair is None:
            continue
        want_maps, got_maps = pair
        gaps = np.max(np.abs(got_maps - want_maps), axis=(-2, -1))
        index = int(np.argmax(gaps))
        if gaps[index] > worst:
            worst, found = float(gaps[index]), (case, want_maps[index], got_maps[index], index)
    return found


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


def comparison_figure(target, label, expected, received, index):
    """Three heatmaps: the reference's map, the student's, and student minus reference."""
    from matplotlib.figure import Figure

    what, rows, columns = MAPS[target]
    expected, received = _crop(expected), _crop(received)
    figure = Figure(figsize=(11.5, 3.6), dpi=100, layout="constrained")
    axes = figure.subplots(1, 3)
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
        axis.set_title(title)
        _label(axis, values, rows, columns)
        figure.colorbar(image, ax=axis, shrink=0.85)
    where = MAP_INDEX.format(index=index) if index else ""
    figure.suptitle(COMPARISON_TITLE.format(target=target, label=label, where=where))
    return figure


def at_work_figure(target, label, values):
    """One heatmap of the student's map on a small case."""
    from matplotlib.figure import Figure

    what, rows, columns = MAPS[target]
    values = _crop(values)
    figure = Figure(figsize=(4.8, 3.8), dpi=100, layout="constrained")
    axis = figure.subplots()
    image = axis.imshow(values, cmap="viridis", aspect="auto")
    axis.set_title(AT_WORK_TITLE.format(target=target, what=what, label=label), fontsize=10)
    _label(axis, values, rows, columns)
    figure.colorbar(image, ax=axis, shrink=0.85)
    return figure


def png(figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    return buffer.getvalue()


def _crop(values: np.ndarray) -> np.ndarray:
    return values[:MOST_CELLS, :MOST_CELLS]


def _label(axis, values, rows, columns) -> None:
    axis.set_xlabel(columns)
    axis.set_ylabel(rows)
    axis.set_xticks(range(values.shape[1]))
    axis.set_yticks(range(values.shape[0]))
    axis.tick_params(labelsize=7)


class PictureCollector:
    """`observe` for grader.engine.grading.grade: a picture for each part that has a map to
    show, of the worst case when it failed, of the student's layer at work when it passed."""

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
                figure = at_work_figure(case.target, case.label, values)
                title = _(
                    AT_WORK_TITLE,
                    target=case.target,
                    what=tr(MAPS[case.target][0]),
                    label=shown_label(case.label),
                )
                alt = title.replace("\n", " ")
                self.pictures.append(Picture(part.name, alt, png(figure), "at work"))
            return
        found = worst_map(cases, expected, received)
        if found is not None:
            case, want, got, index = found
            figure = comparison_figure(case.target, case.label, want, got, index)
            where = _(MAP_INDEX, index=index) if index else ""
            title = _(
                COMPARISON_TITLE,
                target=case.target,
                label=shown_label(case.label),
                where=where,
            )
            self.pictures.append(Picture(part.name, title, png(figure), "difference"))

    def of(self, part_name: str) -> list[Picture]:
        return [picture for picture in self.pictures if picture.part == part_name]
