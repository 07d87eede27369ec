"""Compare what a submission returned with the reference, in float64, and explain differences.

Tolerances are loose enough that a correct implementation written another way (einsum instead
of matmul, TensorFlow ops instead of keras.ops, NumPy in a plain function) always passes, and
tight enough that every known mistake fails: relative 1e-6 in float64 and 2e-3 in float32 (which
also absorbs TF32 matrix products on GPUs), each with an absolute floor scaled by
max(1, max |expected|).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from grader.engine import diagnosis
from grader.i18n import N_, _, tr
from grader.vocabulary.spec import LAYER, Case, Mistake, Recompute

# The names of differences the engine recognises on any exercise (a diagnosis), as against the
# mistakes a record names; the diagnosis engine's own names start with DIAGNOSED.
GENERIC = frozenset(
    {
        N_("all zeros"),
        N_("constant factor"),
        N_("transposed"),
        N_("gradient cut"),
        N_("dtype changed"),
        N_("NaN"),
        N_("mask difference"),
    }
)
# The prefixes of the names of the engine's own diagnoses (str.startswith takes them all).
DIAGNOSED = (diagnosis.SLIP, diagnosis.SEARCHED)
# The diagnoses that are a ratio of the received to the expected values: earned only by several
# values, across the part's failing cases (grader.engine.judging).
RATIOS = frozenset({"constant factor", *(diagnosis.SLIP + name for name in diagnosis.RATIO_SLIPS)})
# What a scalar that differs (and no more is known) is told.
VALUE_WRONG = N_("the value differs from the reference")

TOLERANCES = {"float64": (1e-6, 1e-7), "float32": (2e-3, 2e-3), "float16": (2e-2, 2e-2)}


@dataclass
class Difference:
    """Why `received` is not `expected`.

    `message` explains without revealing expected values (hidden cases show only this);
    `detail` says where and what: the worst element, expected against received.
    """

    message: str
    mistake: str | None = None
    detail: str = ""

    def text(self, reveal: bool = True) -> str:
        if reveal and self.detail:
            return _("{message} ({detail})", message=self.message, detail=self.detail)
        return self.message


def tolerances(case: Case) -> tuple[float, float]:
    rtol, atol = TOLERANCES.get(case.dtype, TOLERANCES["float32"])
    return (
        case.rtol if case.rtol is not None else rtol,
        case.atol if case.atol is not None else atol,
    )


def close(expected: np.ndarray, received: np.ndarray, case: Case) -> np.ndarray:
    """Where `received` is within the case's tolerance of `expected`. The tolerance scales with
    the largest finite expected value (an infinite one would make every value close), and an
    infinite expected value is met only by the same infinity. Comparing infinities warns
    nobody (NumPy would otherwise report their NaN difference on the instructor's console)."""
    rtol, atol = tolerances(case)
    # Booleans and integers are numbers too (NumPy refuses to subtract booleans).
    expected, received = (np.asarray(a, dtype=np.float64) for a in (expected, received))
    finite = np.isfinite(expected)
    with np.errstate(invalid="ignore", over="ignore"):
        scale = max(1.0, float(np.max(np.abs(np.where(finite, expected, 0.0)), initial=0.0)))
        near = np.abs(received - expected) <= atol * scale + rtol * np.abs(expected)
    return np.where(finite, near, received == expected)


def matches(expected: np.ndarray, received: np.ndarray, case: Case) -> bool:
    if not (numeric(expected) and numeric(received)):
        return False
    return np.shape(expected) == np.shape(received) and bool(
        np.all(close(expected, received, case))
    )


def same_output(value, got, case: Case) -> bool:
    """Whether a candidate computation's output is the student's: NaN in the same places (the
    NaN a slip makes, as a maximum over the whole array makes where rows lie far apart, is
    its fingerprint), the same infinities, and the rest within the case's tolerance."""
    value, got = np.asarray(value, dtype=np.float64), np.asarray(got, dtype=np.float64)
    if value.shape != got.shape:
        return False
    missing = np.isnan(value)
    if not np.array_equal(missing, np.isnan(got)):
        return False
    return matches(np.where(missing, 0.0, value), np.where(missing, 0.0, got), case)


def numeric(array) -> bool:
    """Whether `array` holds real numbers (booleans and integers included): complex numbers,
    strings and objects are no answer to compare."""
    return np.asarray(array).dtype.kind in "biuf"


def judgeable(expected, received) -> bool:
    """Whether a property may be judged on `received`: real numbers of the expected shape,
    finite wherever the expected output is. Otherwise the output's own check says what is
    wrong (a shape, NaN), and a property broken only because of that would hide it."""
    if received is None or expected is None or not numeric(received):
        return False
    received, expected = np.asarray(received), np.asarray(expected)
    if received.shape != expected.shape:
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.isfinite(received.astype(np.float64)) | ~np.isfinite(expected)))


def difference(
    expected: np.ndarray,
    received: np.ndarray,
    case: Case,
    mistakes: tuple[Mistake, ...] = (),
    recompute: Recompute | None = None,
    *,
    ratio: bool = True,
    diagnose: bool = True,
) -> Difference | None:
    """None when they agree; otherwise where they differ and, if recognised, the mistake (of
    `mistakes`, else a slip of grader.engine.diagnosis, recomputing by `recompute` if given).

    A ratio ("every value is 1.33 times the expected one", a scale by another size) is said
    only on `diagnosis.ratio_evidence`: several distinct nonzero values sharing it, since any
    one wrong number is some multiple of the right one. `ratio=False` says no ratio at all:
    a part whose failing cases do not share one (grader.engine.judging) has not earned it.
    `diagnose=False` names nothing beyond a wrong shape, dtype or non-finite values: the
    gradient of a wrong output, whose zeros or ratio are the wrong output's own."""
    expected = np.asarray(expected, dtype=np.float64)
    received = np.asarray(received)
    if not numeric(received):
        return Difference(
            _(
                "expected real numbers of shape {shape}, received values of dtype {dtype}",
                shape=expected.shape,
                dtype=received.dtype,
            )
        )
    if received.shape != expected.shape:
        return _shape_difference(expected, received)
    received = received.astype(np.float64)
    finite = np.isfinite(received)
    if not finite.all():
        bad = [int(i) for i in np.argwhere(~finite)[0]]
        count, size = int((~finite).sum()), received.size
        if np.all(received[~finite] == -np.inf):
            # Only -inf, no NaN: a log of 0 or a masked (-inf) value that reaches the result.
            words = _(
                "{count} of {size} values are -inf: a log of 0, or a value masked with -inf "
                "that is then read (picked, summed, or masked before it is used) does this",
                count=count,
                size=size,
            )
        elif masks_something(case) and _in_rows_of_zeros(expected, finite):
            words = _(
                "{count} of {size} values are NaN or infinite, all in rows the reference gives "
                "zeros, where every position is masked: a softmax of only masked scores is 0/0. "
                "Give such rows zeros (select with the mask, ops.where, rather than multiplying "
                "by it or leaving -inf to the softmax)",
                count=count,
                size=size,
            )
        elif _overflow_possible(case):
            words = _(
                "{count} of {size} values are NaN or infinite; an exp() that overflows or a "
                "division by zero does this",
                count=count,
                size=size,
            ) + (_("; use a numerically stable form") if "stability" in case.label else "")
        else:
            words = _(
                "{count} of {size} values are NaN or infinite, on inputs too small for an "
                "exp() to overflow: a division by zero (0/0), the log of 0, or -inf − (-inf) "
                "(a row whose every position is masked with -inf) does this",
                count=count,
                size=size,
            )
        return Difference(words, "NaN", detail=_("first at index {index}", index=bad))
    ok = close(expected, received, case)
    if ok.all():
        return None
    worst = np.unravel_index(
        int(np.argmax(np.where(ok, -1.0, np.abs(received - expected)))), expected.shape
    )
    values = _(
        "expected {expected}, received {received}",
        expected=_fmt(expected[worst]),
        received=_fmt(received[worst]),
    )
    if expected.size == 1:  # a scalar: no "1 of 1 values differ"
        located, differ = values, tr(VALUE_WRONG)
    else:
        located = _("at index {index}: {values}", index=[int(i) for i in worst], values=values)
        differ = _(
            "{count} of {size} values differ from the reference",
            count=int((~ok).sum()),
            size=ok.size,
        )
    both = (
        located if expected.size == 1 else _("{located}; {differ}", located=located, differ=differ)
    )
    if not diagnose:
        return Difference(differ, detail=located)
    for mistake in mistakes:
        candidate = mistake.output(case)
        if candidate is not None and matches(np.asarray(candidate, np.float64), received, case):
            return Difference(tr(mistake.explanation), mistake.name, both)
    agree = lambda a, b: matches(a, b, case)  # noqa: E731
    slip = diagnosis.diagnose(expected, received, case, agree, recompute, ratio=ratio)
    if slip is not None:
        return Difference(slip[1], slip[0], both)
    masked = _mask_words(expected, received, case)
    if masked is not None:
        return Difference(masked, "mask difference", both)
    # All zeros needs several values that are not: one wrong number may be 0 for any reason.
    if not np.any(received) and diagnosis.ratio_evidence(expected):
        return Difference(
            _("every value is zero: is something not computed yet, or overwritten?"),
            "all zeros",
            located,
        )
    factor = _constant_factor(expected, received, case) if ratio else None
    if factor is not None and matches(-expected, received, case):
        # A factor of -1 is no scale: a sign, a difference or a direction is the other way.
        return Difference(
            _(
                "every value has the sign opposite to the expected one: something is the "
                "other way round (a term subtracted where it is added, a difference b − a for "
                "a − b, or a gradient that flows through the wrong term)"
            ),
            "sign flipped",
            located,
        )
    if factor is not None:
        return Difference(
            _(
                "every value is {factor} times the expected one: a scale factor is off",
                factor=_fmt(factor),
            ),
            "constant factor",
            located,
        )
    return Difference(differ, detail=located)


def _mask_words(expected, received, case) -> str | None:
    """Where a mask (True/False over queries i and keys j, the last two axes) differs, when
    every difference goes one way and has one place: the diagonal, later keys, or padding (the
    case's lengths per example); None otherwise."""
    binary = lambda a: bool(np.all((a == 0) | (a == 1)))  # noqa: E731
    if expected.ndim < 2 or not (binary(expected) and binary(received)):
        return None
    lengths = _lengths(case, expected.shape[0])
    if expected.ndim == 2 and lengths is not None:
        return None  # (B, T): examples and positions, no queries and keys
    differ = expected != received
    hides = bool(np.all(expected[differ] == 1))
    if not hides and not np.all(expected[differ] == 0):
        return None  # some hidden, some let through: no one place to name
    steps_q, steps_k = expected.shape[-2:]
    where = np.argwhere(differ)
    i, j = where[:, -2], where[:, -1]
    place = None
    if lengths is not None and expected.ndim >= 3:
        length = lengths[where[:, 0]]
        if np.all(i >= length) and np.all(j < length) and steps_q == steps_k:
            place = _("in the rows of padding queries (i ≥ length), at real keys")
        elif np.all(j >= length):
            place = _("at padding keys (j ≥ length)")
        elif np.all(i >= length):
            place = _("in the rows of padding queries (i ≥ length)")
    if place is None and np.all(i == j):
        place = _("on the diagonal (a position with itself)")
    elif place is None and np.all(j > i):
        place = _("at later keys (j > i)")
    elif place is None and np.all(j < i):
        place = _("at earlier keys (j < i)")
    if place is None:
        return None
    if hides:
        return _(
            "your mask hides {count} pairs {place} that the formula keeps (True means the "
            "query may see the key)",
            count=int(differ.sum()),
            place=place,
        )
    return _(
        "your mask lets through {count} pairs {place} that the formula hides",
        count=int(differ.sum()),
        place=place,
    )


def _lengths(case, batch: int) -> np.ndarray | None:
    """The case's lengths per example (B,), if it has them under a usual name."""
    given = {**case.params, **case.inputs}
    for name in ("lengths", "valid_lens", "source_lengths", "valid_lengths"):
        value = given.get(name)
        if value is None:
            continue
        value = np.asarray(value)
        if value.shape == (batch,):
            return value
    return None


def gradient_difference(
    expected: np.ndarray,
    received: np.ndarray,
    case: Case,
    wrt: str,
    output_right: bool = True,
    *,
    ratio: bool = True,
    flat: Callable[[], bool] | None = None,
) -> Difference | None:
    """Like `difference`, for the gradient with respect to `wrt`. "Something cuts the
    gradient" needs its evidence: the output itself right (`output_right`: else a zero
    gradient may be the wrong output's own, truly zero for this input, and nothing was cut),
    the received gradient zero everywhere, and the expected one beyond the tolerance at some
    of those places (where the reference's gradient is zero too, nothing can be cut). Nor does
    the gradient of a wrong output earn any diagnosis of its own ("every value is zero", a
    ratio, a slip): it is the gradient of another computation, zero or scaled for its reasons.

    `flat()`, asked only then, says whether the right output stays the same when `wrt` moves a
    little (a hard choice, whose own gradient is zero everywhere): then the gradient asked for
    is an estimator's, and its absence is told as such rather than as a cut."""
    found = difference(expected, received, case, ratio=ratio, diagnose=output_right)
    if found is None:
        return None
    received = np.asarray(received)
    if (
        output_right
        and numeric(received)
        and received.shape == expected.shape
        and not np.any(received)
        and not np.all(close(expected, received, case))
    ):
        if flat is not None and flat():
            return Difference(
                _(
                    "the gradient with respect to {wrt} is zero. The output does not change "
                    "when {wrt} moves a little (a hard choice, whose own gradient is zero "
                    "everywhere), so the gradient asked for is an estimator's, such as the "
                    "straight-through one (forward the hard choice, backward the soft one: "
                    "hard + soft − stop_gradient(soft)): it is missing, or cut",
                    wrt=wrt,
                ),
                "estimator missing",
            )
        return Difference(
            _(
                "the gradient with respect to {wrt} is zero, but the output depends on it: "
                "something cuts the gradient (ops.stop_gradient, a round trip through NumPy, or "
                "a Python float())",
                wrt=wrt,
            ),
            "gradient cut",
        )
    return found


def dtype_difference(case: Case, received_dtype: str) -> Difference | None:
    if case.kind != LAYER or received_dtype == case.dtype:
        return None
    return Difference(
        _(
            "for {dtype} inputs the output is {received}: keep the dtype of the inputs (no casts "
            "to a fixed dtype, no NumPy inside call)",
            dtype=case.dtype,
            received=received_dtype,
        ),
        "dtype changed",
    )


def _shape_difference(expected: np.ndarray, received: np.ndarray) -> Difference:
    message = _(
        "expected shape {expected}, received {received}",
        expected=expected.shape,
        received=received.shape,
    )
    if expected.ndim >= 2 and received.shape == expected.shape[:-2] + expected.shape[:-3:-1]:
        return Difference(
            message + _(": the last two axes are swapped (a transpose too many or too few)"),
            "transposed",
        )
    swapped = diagnosis.swapped_shape(expected.shape, received.shape)
    if swapped:
        return Difference(f"{message}: {swapped}", diagnosis.SLIP + "axes swapped")
    if received.ndim == 0:
        return Difference(
            message
            + _(
                ": a single number, where an array is expected (a squeeze, a sum or an "
                ".item() too many?)"
            )
        )
    if received.ndim == expected.ndim:
        apart = [i for i in range(expected.ndim) if expected.shape[i] != received.shape[i]]
        if len(apart) == 1 and abs(expected.shape[apart[0]] - received.shape[apart[0]]) == 1:
            axis, fewer = apart[0], received.shape[apart[0]] < expected.shape[apart[0]]
            words = (
                _(
                    ": axis {axis} has one entry too few (a count rounded down, or a range or "
                    "loop that stops one short)",
                    axis=axis,
                )
                if fewer
                else _(
                    ": axis {axis} has one entry too many (a count rounded up, or a range or "
                    "loop that goes one too far)",
                    axis=axis,
                )
            )
            return Difference(message + words, "off by one")
    return Difference(message)


# Inputs of no larger magnitude than this cannot make an exp() of a few sums of their products
# overflow (e^709 is float64's largest): a NaN there has another cause.
OVERFLOW_MAGNITUDE = 50.0


def masks_something(case: Case) -> bool:
    """Whether the case masks something (a mask, lengths, or a label that says so)."""
    label = case.label.lower()
    given = any(
        case.inputs.get(name) is not None or case.params.get(name) is not None
        for name in ("mask", "valid_lens", "keep", "lengths")
    )
    return given or "mask" in label or "valid_lens" in label


def _in_rows_of_zeros(expected: np.ndarray, finite: np.ndarray) -> bool:
    """Whether every non-finite value lies in a row (the last axis) that the expected output
    gives as all zeros, as a masked softmax gives a row with no position kept."""
    if expected.ndim < 2 or expected.shape[-1] < 2:
        return False
    zero_rows = np.all(expected == 0, axis=-1)
    bad_rows = np.any(~finite, axis=-1)
    return bool(bad_rows.any() and np.all(zero_rows[bad_rows]))


def _overflow_possible(case: Case) -> bool:
    """Whether an exp() may overflow on this case: it is one of the large-value cases (labelled
    for numerical stability), or some input, weight or setting is larger than
    OVERFLOW_MAGNITUDE."""
    if "stability" in case.label:
        return True
    for value in (*case.inputs.values(), *case.weights.values(), *case.params.values()):
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            continue
        finite = array[np.isfinite(array)]
        if finite.size and float(np.max(np.abs(finite))) > OVERFLOW_MAGNITUDE:
            return True
    return False


def _constant_factor(expected, received, case) -> float | None:
    if not diagnosis.ratio_evidence(expected):
        return None
    factor = fitted_factor(expected, received)
    if factor is None or not np.isfinite(factor) or abs(factor - 1.0) < 1e-3:
        return None
    return factor if matches(expected * factor, received, case) else None


def fitted_factor(expected, received) -> float | None:
    """The one factor that maps `expected` onto `received` best (least squares), or None."""
    expected, received = (np.asarray(a, np.float64) for a in (expected, received))
    if expected.shape != received.shape:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        energy = float(np.sum(expected * expected))
        factor = float(np.sum(expected * received)) / energy if energy else None
    return factor if factor is not None and np.isfinite(factor) else None


def _fmt(value) -> str:
    return f"{float(value):.6g}"
