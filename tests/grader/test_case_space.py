"""The cases cover what a docstring allows (issue #29, point 5): wrong submissions that only
cases of another kind tell apart lose their parts, hidden draws keep covering them, and correct
solutions written another way keep full marks (property tolerances are rounding's, not zero)."""

from __future__ import annotations

import numpy as np
import pytest

from grader.engine.cases import make_cases
from grader.engine.results import FAILED, PASSED
from grader.grading import grade
from grader.records import get_exercise
from tests.support.grading import assert_full_marks, failures
from tests.support.planting import plant


def part_status(result, name):
    part = result.part(name)
    return part.status, [c.message for c in failures(part)][:2]


# ---- wrong submissions that the former cases let pass ------------------------------------------

GLOBAL_MAXIMUM = (
    "weights = ops.softmax(filled, axis=-1)",
    "shifted = ops.exp(filled - ops.max(filled))\n"
    "    weights = shifted / ops.sum(shifted, axis=-1, keepdims=True)",
)


def test_a_softmax_shifted_by_the_global_maximum_fails(tmp_path):
    """Rows about +1000 and -1000 in one array: shifted by the largest score of all, every
    exp() of a -1000 row underflows to 0."""
    folder = plant(tmp_path, "masked-softmax", GLOBAL_MAXIMUM)
    result = grade("masked-softmax", folder, parts=["masked_softmax_from_mask"])
    status, shown = part_status(result, "masked_softmax_from_mask")
    assert status == FAILED, shown


CACHED_MASK = (
    "            positions = ops.arange(ops.shape(scores)[-1])\n"
    "            allowed = ops.expand_dims(positions, 0) <= ops.expand_dims(positions, 1)\n",
    "            if not hasattr(self, '_allowed'):  # the mask of the first call, kept\n"
    "                positions = ops.arange(ops.shape(scores)[-1])\n"
    "                self._allowed = ops.expand_dims(positions, 0) <= "
    "ops.expand_dims(positions, 1)\n"
    "            allowed = self._allowed\n",
)


def test_a_layer_that_keeps_the_mask_of_its_first_call_fails(tmp_path):
    """Each layer case calls one layer object on other lengths first (Case.first_call)."""
    folder = plant(tmp_path, "8-3", CACHED_MASK)
    result = grade("8-3", folder, parts=["SelfAttention", "causal mask"])
    assert part_status(result, "causal mask")[0] != PASSED
    # Without a mask nothing is kept: that part stays right.
    assert part_status(result, "SelfAttention")[0] == PASSED


ROUNDED_BOUNDARY = (
    "cdf = ops.cumsum(weights, axis=-1)",
    "cdf = ops.round(ops.cumsum(weights, axis=-1) * 1e6) / 1e6\n"
    "    noise = ops.round(noise * 1e6) / 1e6",
)


def test_a_sampling_boundary_drawn_after_rounding_fails(tmp_path):
    """u just below a cumulative sum c_j: rounded to six decimals, it is c_j, the next key."""
    folder = plant(tmp_path, "hard", ROUNDED_BOUNDARY)
    result = grade("hard", folder, parts=["sampling"])
    assert part_status(result, "sampling")[0] == FAILED


OPEN_WINDOW = ("inside = ops.abs(distance) <= window", "inside = ops.abs(distance) < window")


def test_a_window_without_its_edges_fails_on_a_whole_number_centre(tmp_path):
    folder = plant(tmp_path, "luong", OPEN_WINDOW)
    result = grade("luong", folder, parts=["local_p_weights"])
    assert part_status(result, "local_p_weights")[0] == FAILED


FIXED_UPDATES = (
    "    for unit in np.asarray(order, dtype=int).reshape(-1):\n"
    "        field = current @ weights[unit] + offsets[unit]",
    "    order = np.asarray(order, dtype=int).reshape(-1)\n"
    "    for step in range(weights.shape[0]):  # one update per unit, whatever `order` holds\n"
    "        unit = order[step % len(order)]\n"
    "        field = current @ weights[unit] + offsets[unit]",
)


def test_a_fixed_number_of_updates_in_place_of_one_per_entry_of_order_fails(tmp_path):
    folder = plant(tmp_path, "8-6", FIXED_UPDATES)
    result = grade("8-6", folder, parts=["async_update"])
    assert part_status(result, "async_update")[0] == FAILED


# ---- hidden draws keep covering them ---------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_hidden_draws_keep_every_kind_of_case(seed):
    hidden = {
        record: make_cases(get_exercise(record), 0, seed)
        for record in ("masked-softmax", "hard", "luong", "8-6", "8-3")
    }

    def drawn(record, part):
        return [c for c in hidden[record][part] if c.hidden]

    def rows_apart(case):
        scores = np.asarray(case.inputs["scores"]).reshape(-1, case.inputs["scores"].shape[-1])
        return scores.max() > 500 and scores.min() < -500

    for part in ("masked_softmax", "masked_softmax_from_mask"):
        assert any(rows_apart(c) for c in drawn("masked-softmax", part)), part
    samples = drawn("hard", "sampling")
    assert any(
        np.isin(c.inputs["noise"], np.cumsum(c.inputs["weights"], axis=-1)).any() for c in samples
    )
    windows = drawn("luong", "local_p_weights")
    assert any(np.any(c.inputs["positions"] == np.round(c.inputs["positions"])) for c in windows)
    assert any(c.first_call for c in drawn("8-3", "causal mask"))
    orders = [c for c in hidden["8-6"]["async_update"] if c.hidden]
    assert any(len(c.inputs["order"]) != np.shape(c.inputs["W"])[0] for c in orders)


def test_public_orders_have_other_lengths_and_repeats():
    cases = make_cases(get_exercise("8-6"), 0)["async_update"]
    lengths = {(len(c.inputs["order"]), np.shape(c.inputs["W"])[0]) for c in cases}
    assert any(n < m for n, m in lengths) and any(n > m for n, m in lengths)
    assert any(len(set(c.inputs["order"].tolist())) < len(c.inputs["order"]) for c in cases)


# ---- correct solutions written another way keep full marks -----------------------------------

# The softmax shifted by the maximum of each row taken over the padded positions too, exp, times
# the mask, normalised: the padded states' gradient is rounding (8e-17), not an exact 0.
SHIFT_OVER_PADDING = (
    "    filled = ops.where(valid, scores, ops.cast(-1e9, scores.dtype))\n"
    "    return ops.softmax(filled, axis=-1)",
    "    kept = ops.cast(valid, scores.dtype)\n"
    "    shifted = ops.exp(scores - ops.max(scores, axis=-1, keepdims=True)) * kept\n"
    "    total = ops.sum(shifted, axis=-1, keepdims=True)\n"
    "    return shifted / ops.where(total > 0, total, ops.ones_like(total))",
)


def test_a_softmax_shifted_over_padded_positions_too_keeps_full_marks(tmp_path):
    folder = plant(tmp_path, "bahdanau", SHIFT_OVER_PADDING)
    result = grade("bahdanau", folder)
    assert_full_marks(result)


# Other correct styles, on the parts with properties: a logsumexp in place of a softmax, NumPy
# loops in float64, a softmax shifted by the row's maximum then renormalised.
LOGSUMEXP = (
    "    weights = ops.softmax(filled, axis=-1)\n",
    "    weights = ops.exp(filled - ops.logsumexp(filled, axis=-1, keepdims=True))\n",
)
WINDOW_LOOPS = (
    "    dtype = ops.convert_to_tensor(scores).dtype\n"
    "    source = ops.arange(ops.shape(scores)[-1], dtype=dtype)\n"
    "    distance = source[None, None, :] - ops.cast(positions, dtype)[:, :, None]\n"
    "    inside = ops.abs(distance) <= window\n"
    "    aligned = ops.softmax(ops.where(inside, scores, ops.cast(-1e9, dtype)), axis=-1)\n"
    "    sigma = window / 2.0\n"
    "    return aligned * ops.exp(-ops.square(distance) / (2.0 * sigma * sigma))\n",
    "    import numpy as np\n\n"
    "    scores = np.asarray(scores, np.float64)\n"
    "    out = np.zeros_like(scores)\n"
    "    for b in range(scores.shape[0]):\n"
    "        for t in range(scores.shape[1]):\n"
    "            p = float(positions[b, t])\n"
    "            keep = [s for s in range(scores.shape[2]) if abs(s - p) <= window]\n"
    "            top = max(scores[b, t, s] for s in keep)\n"
    "            total = sum(np.exp(scores[b, t, s] - top) for s in keep)\n"
    "            for s in keep:\n"
    "                gauss = np.exp(-((s - p) ** 2) / (2 * (window / 2) ** 2))\n"
    "                out[b, t, s] = np.exp(scores[b, t, s] - top) / total * gauss\n"
    "    return out\n",
)
KERNEL_ROW_SHIFT = (
    "    return ops.softmax(-ops.square(differences) / (2.0 * bandwidth**2), axis=-1)",
    "    logits = -ops.square(differences) / (2.0 * bandwidth**2)\n"
    "    shifted = ops.exp(logits - ops.max(logits, axis=-1, keepdims=True))\n"
    "    return shifted / ops.sum(shifted, axis=-1, keepdims=True)",
)


@pytest.mark.parametrize(
    ("exercise_id", "parts", "replacement"),
    [
        ("masked-softmax", None, LOGSUMEXP),
        ("luong", ["local_p_weights"], WINDOW_LOOPS),
        ("nw", None, KERNEL_ROW_SHIFT),
    ],
)
def test_correct_solutions_in_other_styles_keep_full_marks(
    tmp_path, exercise_id, parts, replacement
):
    result = grade(exercise_id, plant(tmp_path, exercise_id, replacement), parts=parts)
    assert_full_marks(result)


# ---- large scores and offsets beyond the ring, in the public cases and every hidden draw --------


def _overflows(scores) -> bool:
    return bool(np.max(scores) > np.log(np.finfo(np.float64).max))


def _drawn(record, seed):
    """The public cases (seed None) or the hidden ones of a draw, by part."""
    cases = make_cases(get_exercise(record), 0, seed)
    return {
        part: [c for c in found if c.hidden == (seed is not None)] for part, found in cases.items()
    }


@pytest.mark.parametrize("seed", [None, 1, 2])
def test_every_draw_has_scores_an_unstable_exp_overflows_or_underflows_on(seed):
    """retrieve (β Xᵀξ), ntm_address (β cos) and nadaraya_watson (−u²/2 of the nearest
    training point) each have a case where exp() of the scores overflows or underflows for
    every key, so a softmax without its maximum subtracted fails there."""
    from grader.reference import memory

    retrieve = _drawn("modern-hopfield", seed)["retrieve"]
    assert any(_overflows(c.params["beta"] * c.inputs["X"].T @ c.inputs["xi"]) for c in retrieve)
    ntm = [c for c in _drawn("8-5", seed)["ntm_address"] if c.target == "ntm_address"]
    cosines = [memory.cosine_rows(c.inputs["memory"], c.inputs["key"]) for c in ntm]
    assert any(_overflows(c.inputs["beta"][:, None] * k) for c, k in zip(ntm, cosines, strict=True))
    regression = _drawn("nw", seed)["nadaraya_watson"]
    regression = [c for c in regression if c.params.get("kernel") == "gaussian"]

    def every_exp_underflows(case):
        u = (case.inputs["queries"][:, None] - case.inputs["keys"][None]) / case.params.get(
            "bandwidth", 1.0
        )
        return bool(np.all(np.exp(-(u**2) / 2) == 0.0))

    assert any(every_exp_underflows(c) for c in regression)


@pytest.mark.parametrize("seed", [None, 1, 2])
def test_every_draw_shifts_by_offsets_beyond_the_ring(seed):
    """Some shift has an offset |o| > N not a multiple of N: a slice by the raw offset (Python
    clamps it) does not wrap there."""
    cases = _drawn("8-5", seed)

    def beyond(case):
        slots = case.inputs["weights" if "weights" in case.inputs else "w_previous"].shape[-1]
        k = case.inputs["shift"].shape[-1] // 2
        return any(abs(o) > slots and o % slots for o in range(-k, k + 1))

    for part in ("circular_shift", "ntm_address"):
        assert any(beyond(c) for c in cases[part] if "shift" in c.inputs), part
