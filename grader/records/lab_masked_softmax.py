"""Lab masked-softmax: valid lengths and boolean masks, zero weight where masked, never NaN."""

from __future__ import annotations

import numpy as np

from grader.engine.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part, Property

# --- cases ---------------------------------------------------------------------------------


def _lengths(rng, shape, maxlen, include=()):
    """Integer lengths in [0, maxlen], with the values of `include` placed first."""
    lens = rng.integers(0, maxlen + 1, size=shape)
    flat = lens.reshape(-1)
    for index, value in enumerate(include[: flat.size]):
        flat[index] = value
    return lens.astype(np.int64)


def sequence_mask_cases(rng, hidden=False):
    if hidden:
        specs = [
            (
                tuple(int(v) for v in rng.integers(1, 5, size=int(rng.integers(1, 3)))),
                int(rng.integers(1, 8)),
            )
            for _ in range(3)
        ]
    else:
        # ((shape of valid_lens), maxlen): (B,), (B, Tq), maxlen 1, a square one.
        specs = [((4,), 6), ((2, 3), 5), ((3,), 1), ((5,), 5)]
    cases = []
    for shape, maxlen in specs:
        cases.append(
            Case(
                "sequence_mask",
                FUNCTION,
                f"valid_lens of shape {shape}, maxlen={maxlen}",
                inputs={"valid_lens": _lengths(rng, shape, maxlen, include=(0, maxlen))},
                params={"maxlen": maxlen},
            )
        )
    return cases


def _scores(rng, shape, large=False):
    scores = rng.standard_normal(shape)
    return 1000.0 + 5.0 * scores if large else scores


def _softmax_case(rng, b, tq, tk, lens="batch", large=False, include=(0,)):
    label = f"B={b} Tq={tq} Tk={tk}"
    inputs = {"scores": _scores(rng, (b, tq, tk), large)}
    params = {}
    if lens is None:
        params["valid_lens"] = None
        label += ", valid_lens=None"
    else:
        shape = (b,) if lens == "batch" else (b, tq)
        inputs["valid_lens"] = _lengths(rng, shape, tk, include=include)
        label += f", valid_lens of shape {shape}"
        if 0 in inputs["valid_lens"]:
            label += " (a fully masked row)"
    if large:
        label += ", large scores (about 1000: numerical stability)"
    return Case("masked_softmax", FUNCTION, label, inputs=inputs, params=params)


def masked_softmax_cases(rng, hidden=False):
    if hidden:
        cases = []
        for lens in ("batch", "query", "query"):
            b, tq, tk = (int(v) for v in rng.integers(1, 7, size=3))
            cases.append(_softmax_case(rng, b, tq, tk, lens, include=(0,)))
        return cases
    return [
        _softmax_case(rng, 2, 3, 5, "batch", include=(2, 5)),
        _softmax_case(rng, 3, 4, 6, "query", include=(0, 6, 1)),
        _softmax_case(rng, 2, 2, 4, "batch", include=(0, 3)),
        _softmax_case(rng, 1, 1, 1, "batch", include=(1,)),
        _softmax_case(rng, 2, 3, 4, None),
        _softmax_case(rng, 2, 3, 6, "query", large=True, include=(3, 6, 0)),
    ]


def _mask_case(rng, b, tq, tk, kind, large=False):
    if kind == "causal":
        mask = np.tril(np.ones((tq, tk), dtype=bool))
        label = f"B={b} Tq={tq} Tk={tk}, causal mask of shape {mask.shape}"
    elif kind == "padding":
        lens = _lengths(rng, (b,), tk, include=(tk, 1))
        mask = np.arange(tk)[None, None, :] < lens[:, None, None]
        label = f"B={b} Tq={tq} Tk={tk}, padding mask of shape {mask.shape}"
    else:
        mask = rng.random((b, tq, tk)) < 0.6
        mask[0, 0, :] = False  # a fully masked row
        if tq > 1:
            mask[0, 1, :] = True  # a row with nothing masked
        label = f"B={b} Tq={tq} Tk={tk}, mask of shape {mask.shape} (a fully masked row)"
    if large:
        label += ", large scores (about 1000: numerical stability)"
    return Case(
        "masked_softmax_from_mask",
        FUNCTION,
        label,
        inputs={"scores": _scores(rng, (b, tq, tk), large), "mask": mask},
    )


def from_mask_cases(rng, hidden=False):
    if hidden:
        cases = []
        for kind in ("causal", "padding", "random"):
            b, tq, tk = (int(v) for v in rng.integers(1, 7, size=3))
            cases.append(_mask_case(rng, b, tq, tq if kind == "causal" else tk, kind))
        return cases
    return [
        _mask_case(rng, 2, 4, 4, "causal"),
        _mask_case(rng, 3, 2, 5, "padding"),
        _mask_case(rng, 2, 3, 6, "random"),
        _mask_case(rng, 2, 3, 5, "random", large=True),
    ]


def _pooling_case(rng, b, tq, tk, dv, lens="batch", include=(0,), dtype="float64"):
    shape = (b,) if lens == "batch" else (b, tq)
    valid_lens = _lengths(rng, shape, tk, include=include)
    label = f"B={b} Tq={tq} Tk={tk} d_v={dv}, valid_lens of shape {shape}"
    if 0 in valid_lens:
        label += " (a fully masked row)"
    if dtype != "float64":
        label += f" {dtype}"
    return Case(
        "MaskedAttentionPooling",
        LAYER,
        label,
        inputs={
            "scores": rng.standard_normal((b, tq, tk)),
            "values": rng.standard_normal((b, tk, dv)),
            "valid_lens": valid_lens.astype(np.float64),
        },
        upstream=rng.standard_normal((b, tq, dv)),
        dtype=dtype,
    )


def pooling_cases(rng, hidden=False):
    if hidden:
        cases = []
        for lens in ("batch", "query"):
            b, tq, tk, dv = (int(v) for v in rng.integers(1, 7, size=4))
            cases.append(_pooling_case(rng, b, tq, tk, dv, lens))
        return cases
    return [
        _pooling_case(rng, 2, 3, 5, 4, include=(2, 5)),
        _pooling_case(rng, 3, 2, 4, 3, include=(0, 4, 1)),
        _pooling_case(rng, 1, 1, 1, 1, include=(1,)),
        _pooling_case(rng, 2, 4, 6, 2, "query", include=(0, 6, 3)),
        _pooling_case(rng, 2, 4, 6, 3, include=(0, 4), dtype="float32"),
    ]


# --- known mistakes, recomputed in NumPy ---------------------------------------------------


def _softmax(scores, axis=-1):
    shifted = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _masked(scores, mask, axis=-1):
    mask = np.broadcast_to(mask, scores.shape)
    weights = _softmax(np.where(mask, scores, -1e9), axis=axis)
    return np.where(mask, weights, 0.0)


def _mask_of(case, extra=0):
    """The case's boolean mask broadcast to the scores' shape; `extra` widens lengths."""
    scores = case.inputs["scores"]
    if "mask" in case.inputs:
        return np.broadcast_to(case.inputs["mask"], scores.shape)
    lens = case.inputs.get("valid_lens")
    if lens is None:
        return np.ones(scores.shape, dtype=bool)
    lens = lens.astype(np.int64)
    lens = lens[:, None] if lens.ndim == 1 else lens
    return np.broadcast_to(np.arange(scores.shape[-1]) < lens[..., None] + extra, scores.shape)


def _pooled(case, weights):
    if "values" in case.inputs:
        return weights @ case.inputs["values"]
    return weights


def _uniform_when_empty(case):
    """d2l's masked softmax: -1e6 fill and no zeroing, so an empty row comes out uniform."""
    mask = _mask_of(case)
    if mask.any(axis=-1).all():
        return None  # no fully masked row: this mistake agrees with the right answer
    return _pooled(case, _softmax(np.where(mask, case.inputs["scores"], -1e6)))


def _not_renormalised(case):
    mask = _mask_of(case)
    if mask.all():
        return None
    return _pooled(case, _softmax(case.inputs["scores"]) * mask)


def _off_by_one(case):
    if "valid_lens" not in case.inputs:
        return None
    return _pooled(case, _masked(case.inputs["scores"], _mask_of(case, extra=1)))


def _wrong_axis(case):
    scores = case.inputs["scores"]
    if scores.shape[-2] == 1:
        return None
    return _pooled(case, _masked(scores, _mask_of(case), axis=-2))


def _inverted(case):
    return _masked(case.inputs["scores"], ~_mask_of(case))


def _sequence_mask(case, compare):
    lens = case.inputs["valid_lens"]
    return compare(np.arange(case.params["maxlen"]), lens[..., None])


def _sequence_mask_transposed(case):
    lens = case.inputs["valid_lens"]
    if lens.ndim != 1 or lens.shape[0] != case.params["maxlen"]:
        return None
    return np.arange(case.params["maxlen"])[:, None] < lens[None, :]


# --- properties ----------------------------------------------------------------------------


def _masked_positions_are_zero(case, output):
    mask = _mask_of(case)
    output = np.asarray(output, np.float64)
    if output.shape != mask.shape:
        return None  # the shape is reported by the output check
    leaks = (~mask) & (output != 0.0)
    if leaks.any():
        where = [int(i) for i in np.argwhere(leaks)[0]]
        return (
            f"a masked position has weight {output[tuple(where)]:.3g} at index {where}; masked "
            "keys must get exactly zero weight"
        )
    return None


def _rows_sum_to_one_or_zero(case, output):
    mask = _mask_of(case)
    output = np.asarray(output, np.float64)
    if output.shape != mask.shape:
        return None
    sums = output.sum(axis=-1)
    want = mask.any(axis=-1).astype(np.float64)
    bad = ~(np.abs(sums - want) <= 1e-6)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        kind = "a row with kept keys" if want[where] else "a fully masked row"
        return (
            f"{kind} sums to {sums[where]:.6g} at index {list(where)}, not {want[where]:g}: "
            "the kept weights of a row sum to one, a fully masked row is all zeros"
        )
    return None


PROPERTIES = (
    Property("masked positions get zero weight", _masked_positions_are_zero),
    Property("rows sum to one (zero when fully masked)", _rows_sum_to_one_or_zero),
)

UNIFORM = Mistake(
    "fully masked row uniform",
    "A row whose keys are all masked came out uniform (1/Tk each), as with a large negative "
    "fill value alone: set the masked weights to zero after the softmax, so such a row is all "
    "zeros.",
    _uniform_when_empty,
)
NOT_RENORMALISED = Mistake(
    "mask applied after the softmax",
    "The softmax ran over all keys and the masked weights were zeroed afterwards, so the kept "
    "weights no longer sum to one: mask the scores before the softmax.",
    _not_renormalised,
)
OFF_BY_ONE = Mistake(
    "one key too many",
    "Each row keeps valid_len + 1 keys: position j is valid for j < valid_len (positions "
    "start at 0).",
    _off_by_one,
)
WRONG_AXIS = Mistake(
    "softmax over the queries",
    "The softmax normalises over the queries (axis -2); it must run over the keys, the last axis.",
    _wrong_axis,
)

RECORD = Exercise(
    id="masked-softmax",
    title="Lab: Masked softmax: padding, valid lengths and causal masks",
    file="lab_masked_softmax.py",
    section="NNDL (8.1), (8.6); d2l masked softmax",
    timeout=15.0,
    summary=(
        "Attention over padded batches: build the mask of valid positions from lengths, a "
        "softmax that gives masked keys exactly zero weight (by lengths, d2l style, and by a "
        "boolean mask such as a causal one), rows that still sum to one, all-zero rows (not "
        "NaN) when every key is masked, and an attention pooling layer whose gradients stay "
        "finite."
    ),
    parts=(
        Part(
            name="sequence_mask",
            points=2,
            targets=("sequence_mask",),
            make_cases=sequence_mask_cases,
            description="sequence_mask: True at positions j < valid_len.",
            mistakes=(
                Mistake(
                    "one position too many",
                    "Position j is valid for j < valid_len; you kept j <= valid_len.",
                    lambda case: _sequence_mask(case, np.less_equal),
                ),
                Mistake(
                    "inverted",
                    "The mask is inverted: True must mark the valid positions (the first "
                    "valid_len), False the padding.",
                    lambda case: _sequence_mask(case, np.greater_equal),
                ),
                Mistake(
                    "axes swapped",
                    "The mask is transposed: its last axis runs over the maxlen positions, its "
                    "first over the lengths.",
                    _sequence_mask_transposed,
                ),
            ),
        ),
        Part(
            name="masked_softmax",
            points=4,
            targets=("masked_softmax",),
            make_cases=masked_softmax_cases,
            description="masked_softmax(scores, valid_lens): lengths (B,) or (B, Tq), or None.",
            mistakes=(UNIFORM, NOT_RENORMALISED, OFF_BY_ONE, WRONG_AXIS),
            properties=PROPERTIES,
        ),
        Part(
            name="masked_softmax_from_mask",
            points=2,
            targets=("masked_softmax_from_mask",),
            make_cases=from_mask_cases,
            description="masked_softmax_from_mask(scores, mask): causal, padding and general "
            "boolean masks.",
            mistakes=(
                Mistake(
                    "mask inverted",
                    "The mask is read the wrong way round: True means keep, False means mask.",
                    _inverted,
                ),
                UNIFORM,
                NOT_RENORMALISED,
                WRONG_AXIS,
            ),
            properties=PROPERTIES,
        ),
        Part(
            name="MaskedAttentionPooling",
            points=2,
            targets=("MaskedAttentionPooling",),
            make_cases=pooling_cases,
            description="MaskedAttentionPooling.call: masked weights times values; finite "
            "gradients, also for fully masked rows.",
            mistakes=(UNIFORM, NOT_RENORMALISED, OFF_BY_ONE, WRONG_AXIS),
        ),
    ),
)
