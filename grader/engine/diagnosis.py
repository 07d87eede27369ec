"""Generic slips, recognised on any exercise where no mistake of the record names the failure.

Each slip is computed in the grader's process from the expected output, the received one and
the case: its named sizes (the "B=2 Tq=3 Tk=5 d=4" of its label, which every record writes
from its `Dims` table with grader.engine.sampling.dims_label), its inputs and its weights. The
slips: a scale by another size of the case or its square root ("you divided by √Tk = √5; divide
by √d = √4"), a normalisation over another axis, two axes swapped (batch and time, say), the
right values in the wrong places (heads split or merged in the wrong order), a bias or a
residual input missing or added twice.

Where a part declares how its output is recomputed (`Part.recompute`, a reference function and
which of its arguments are weights, the scale and lengths: grader.vocabulary.spec.Recompute), the
reference is also recomputed in the grader's process under each slip of its arguments: a weight
used transposed, the scores scaled by the square root of another size of the case ("you scaled
by √value_dim = √3; scale by √key_dim = √2"), valid lengths off by one. A recomputation that does
not give the expected output itself is not trusted, and a slip is named only when it explains
every value of the output.

Nothing here names an exercise: a record's own `Mistake`s are tried first (grader.engine.compare)
and say more where they apply. A slip's name is a key (English, as results keep it); its
explanation is made in the language in use (judging runs in the grader's process).
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np

from grader.i18n import N_, _
from grader.vocabulary.spec import Case, Recompute, call_with_case

# "Tq=3" in a label; not "0.5=x" nor a part of a word.
_SIZE = re.compile(r"(?<![\w.])([A-Za-z][\w]*)=(\d+)(?![\w.])")
SLIP = "slip: "
# The prefix of a mistake found by grader.engine.search (a mutant of the reference).
SEARCHED = "found: "
# Sizes nothing is ever scaled by: the batch.
NEVER_A_SCALE = frozenset({"B", "batch"})


def named_sizes(case: Case) -> list[tuple[str, int]]:
    """Every (name, size) of a case's label ("B=2 Tq=3" gives B 2 and Tq 3), in its order."""
    return [(name, int(value)) for name, value in _SIZE.findall(case.label)]


def sizes(case: Case) -> dict[str, int]:
    """The named sizes of a case (from its label), those above 1 only (a size of 1 scales
    nothing), but the batch's."""
    found = {name: value for name, value in named_sizes(case) if value > 1}
    return {name: value for name, value in found.items() if name not in NEVER_A_SCALE}


TRANSPOSED_WEIGHT = N_(
    "this is the output with {weight} used transposed ({weight}ᵀ in its place): use the "
    "weight as it is given, of shape (inputs, outputs)"
)
SCALED_BY_ANOTHER = N_("you scaled by {used}; scale by {right}")
LENGTHS_PLUS_ONE = N_(
    "each row keeps one position too many: a mask off by one (position j is valid for "
    "j < {lengths}; positions start at 0)"
)
LENGTHS_MINUS_ONE = N_(
    "each row keeps one position too few: a mask off by one (position j is valid for "
    "j < {lengths}, the last valid one included)"
)


# The slips that are a ratio of the received to the expected values.
RATIO_SLIPS = ("scaled by another size", "scale missing", "scaled twice")
# The fewest distinct nonzero expected values that must share a ratio before it is named.
RATIO_VALUES = 3


def ratio_evidence(expected: np.ndarray) -> bool:
    """Whether `expected` can show a ratio: at least RATIO_VALUES distinct nonzero values. One
    wrong number is always some multiple of the right one (an extra bias, another size, a
    subtraction for a product, float16 rounding); only several sharing it point at a scale."""
    values = np.asarray(expected, np.float64)
    values = values[np.isfinite(values) & (values != 0.0)]
    return len(np.unique(np.round(values, 9))) >= RATIO_VALUES


def diagnose(
    expected: np.ndarray,
    received: np.ndarray,
    case: Case,
    agree,
    recompute: Recompute | None = None,
    *,
    ratio: bool = True,
) -> tuple | None:
    """(name, explanation) of the first slip that explains `received`, or None. `agree(a, b)`
    says whether two arrays of the expected shape agree within the case's tolerance;
    `recompute`: the part's declaration of how its reference is recomputed, if any. A ratio
    slip (RATIO_SLIPS) needs `ratio` and `ratio_evidence`; the others explain every value by
    construction (a transpose, an axis, a bias) and need no more."""
    if recompute is not None and (not recompute.targets or case.target in recompute.targets):
        found = _recomputed_slip(expected, received, case, agree, recompute)
        if found:
            return SLIP + found[0], found[1]
    slips = (_normalised_elsewhere, _axes_swapped, _bias_or_residual)
    if ratio and ratio_evidence(expected):
        slips = (_scaled_by_a_size, *slips)
    for slip in slips:
        found = slip(expected, received, case, agree)
        if found:
            return SLIP + found[0], found[1]
    if _same_values_elsewhere(expected, received, agree):
        return SLIP + "values moved", _(
            "the values are right but in the wrong places: a reshape where a transpose was "
            "needed, or axes (heads, time steps) split or merged in the wrong order"
        )
    return None


def _recomputed_slip(expected, received, case, agree, recompute: Recompute):
    def output(**changed):
        try:
            found = call_with_case(recompute.function, case, changed)
        except Exception:  # noqa: BLE001 - a slip the reference cannot compute is no slip
            return None
        found = found[0] if isinstance(found, tuple) else found
        found = np.asarray(found, dtype=np.float64)
        return found if found.shape == expected.shape else None

    def explains(**changed) -> bool:
        found = output(**changed)
        return found is not None and agree(found, received)

    # The recomputation must give the expected output itself before any slip of it is trusted.
    plain = output()
    if plain is None or not agree(plain, expected):
        return None
    for slip in (_weight_transposed, _scaled_inside, _lengths_off_by_one):
        found = slip(case, recompute, explains)
        if found:
            return found
    return None


def _weight_transposed(case, recompute, explains):
    for name in recompute.weights:
        weight = case.weights.get(name, case.inputs.get(name))
        if weight is None or np.ndim(weight) < 2:
            continue
        weight = np.asarray(weight)
        # A square weight only: another would not fit transposed, and the code would crash.
        if weight.shape[-1] != weight.shape[-2] or np.allclose(weight, np.swapaxes(weight, -1, -2)):
            continue
        if explains(**{name: np.swapaxes(weight, -1, -2)}):
            return "weight transposed", _(TRANSPOSED_WEIGHT, weight=name)
    return None


def _scaled_inside(case, recompute, explains):
    if not recompute.scale:
        return None
    argument, size = recompute.scale
    named = _sizes_settings_first(case)
    right = named.get(size, case.params.get(size))
    if not isinstance(right, int | np.integer) or isinstance(right, bool):
        return None
    right = int(right)
    by_value: dict[int, list[str]] = {}
    for name, value in named.items():
        by_value.setdefault(value, []).append(name)
    for value, names in by_value.items():
        if value == right or size in names:
            continue
        if explains(**{argument: value}):
            return "scaled by another size", _(
                SCALED_BY_ANOTHER, used=f"√{_either(names)} = √{value}", right=f"√{size} = √{right}"
            )
    if right > 1 and explains(**{argument: right * right}):
        return "scaled by the size, not its root", _(
            SCALED_BY_ANOTHER, used=f"{size} = {right}", right=f"√{size} = √{right}"
        )
    return None


def _lengths_off_by_one(case, recompute, explains):
    for name in recompute.lengths:
        lengths = case.inputs.get(name, case.params.get(name))
        if lengths is None or not isinstance(lengths, np.ndarray | list | tuple):
            continue
        lengths = np.asarray(lengths)
        if explains(**{name: lengths + 1}):
            return "mask off by one", _(LENGTHS_PLUS_ONE, lengths=name)
        if np.all(lengths >= 1) and explains(**{name: lengths - 1}):
            return "mask off by one", _(LENGTHS_MINUS_ONE, lengths=name)
    return None


def _sizes_settings_first(case: Case) -> dict[str, int]:
    """The case's named sizes, its settings (key_dim=, value_dim=) before its shapes' sizes, so
    that "√value_dim or Tk = √3" names the setting first."""
    named = sizes(case)
    first = {name: value for name, value in named.items() if name in case.params}
    return first | {name: value for name, value in named.items() if name not in first}


def _scaled_by_a_size(expected, received, case, agree):
    """A scale by another size of the case (or its root). Evidence: `ratio_evidence` (checked
    by `diagnose`), one factor that explains every value, and that factor equal to a ratio of
    two of the case's named sizes (or a size itself); silent otherwise."""
    with np.errstate(over="ignore", invalid="ignore"):
        energy = float(np.sum(expected * expected))
        factor = float(np.sum(expected * received)) / energy if energy else math.nan
    if (
        not math.isfinite(factor)
        or abs(factor - 1.0) < 1e-3
        or not agree(expected * factor, received)
    ):
        return None
    named = sizes(case)
    by_value: dict[int, list[str]] = {}
    for name, value in named.items():
        by_value.setdefault(value, []).append(name)

    def call(value, root):
        names = _either(by_value[value])
        return f"√{names} = √{value}" if root else f"{names} = {value}"

    close = lambda a, b: math.isclose(a, b, rel_tol=1e-6)  # noqa: E731
    # Square roots first (the scale of attention is one), then the sizes themselves.
    for root in (True, False):
        for right, used in itertools.permutations(by_value, 2):
            ratio = math.sqrt(right / used) if root else right / used
            if close(factor, ratio):
                return "scaled by another size", _(
                    "every value is {factor} times the expected one: you divided by {used}; "
                    "divide by {right}",
                    factor=f"{factor:.4g}",
                    used=call(used, root),
                    right=call(right, root),
                )
        for value in by_value:
            scale = math.sqrt(value) if root else value
            if close(factor, scale):
                return "scale missing", _(
                    "every value is {factor} times the expected one: a division by {scale} is "
                    "missing",
                    factor=call(value, root),
                    scale=("√" if root else "") + _either(by_value[value]),
                )
            if close(factor, 1 / scale):
                return "scaled twice", _(
                    "every value is 1/{scale} of the expected one: you divided by {factor} once "
                    "too often",
                    scale=call(value, root).split(" = ")[0],
                    factor=call(value, root),
                )
    return None


def _normalised_elsewhere(expected, received, case, agree):
    """Rows of the expected output sum to one along one axis, the received along another.
    Evidence: both non-negative, the expected summing to one along exactly one axis, the
    received along another of size > 1; silent otherwise."""
    if expected.ndim < 2 or np.any(expected < -1e-9) or np.any(received < -1e-9):
        return None
    ones = lambda array, axis: np.allclose(array.sum(axis=axis), 1.0, atol=1e-6)  # noqa: E731
    right = [axis for axis in range(expected.ndim) if ones(expected, axis)]
    used = [axis for axis in range(received.ndim) if ones(received, axis) and axis not in right]
    if len(right) != 1 or not used or expected.shape[used[0]] == 1:
        return None
    return "normalised over another axis", _(
        "the output sums to one over axis {used} but must over axis {right}: a softmax (or a "
        "sum) over the wrong axis",
        used=_axis(used[0], received),
        right=_axis(right[0], expected),
    )


def _axes_swapped(expected, received, case, agree):
    """Two axes of equal size (> 1) swapped. Evidence: the swapped expected output explains
    every received value (and, the received being wrong, the swap changes something)."""
    for first, second in itertools.combinations(range(expected.ndim), 2):
        if second == expected.ndim - 1 and first == expected.ndim - 2:
            continue  # the last two: compare's own "transposed"
        if expected.shape[first] != expected.shape[second] or expected.shape[first] == 1:
            continue
        if agree(np.swapaxes(expected, first, second), received):
            return "axes swapped", _(
                "axes {first} and {second} of the output are swapped (the batch and time axes, "
                "say): check the order of your axes",
                first=_axis(first, expected),
                second=_axis(second, expected),
            )
    return None


def swapped_shape(expected_shape: tuple, received_shape: tuple) -> str:
    """Words for a received shape that is the expected one with two axes swapped (not the
    last two, which grader.engine.compare names), or ""."""
    if len(expected_shape) != len(received_shape) or len(expected_shape) < 3:
        return ""
    for first, second in itertools.combinations(range(len(expected_shape)), 2):
        if (first, second) == (len(expected_shape) - 2, len(expected_shape) - 1):
            continue
        swapped = list(expected_shape)
        swapped[first], swapped[second] = swapped[second], swapped[first]
        if tuple(swapped) == tuple(received_shape):
            return _(
                "axes {first} and {second} are swapped (the batch and time axes, say): "
                "check the order of your axes",
                first=first,
                second=second,
            )
    return ""


def _bias_or_residual(expected, received, case, agree):
    """An input or weight of more than one value, of the output's shape (a residual) or 1-D
    (a bias), missing or added twice. Evidence: expected ∓ it explains every received value."""
    arrays = {**case.inputs, **case.weights}
    for name, array in arrays.items():
        array = np.asarray(array, dtype=np.float64)
        if array.size <= 1:
            continue
        try:
            broadcast = np.broadcast_to(array, expected.shape)
        except ValueError:
            continue
        if array.shape != expected.shape and array.ndim != 1:
            continue
        residual = array.shape == expected.shape
        what = "residual" if residual else "bias"
        if agree(expected - broadcast, received):
            message = (
                _("the output lacks + {name}: the residual {name} is missing", name=name)
                if residual
                else _("the output lacks + {name}: the bias {name} is missing", name=name)
            )
            return f"{what} missing", message
        if agree(expected + broadcast, received):
            message = (
                _("{name} was added twice: the residual {name} is in it already", name=name)
                if residual
                else _("{name} was added twice: the bias {name} is in it already", name=name)
            )
            return f"{what} twice", message
    return None


def _same_values_elsewhere(expected, received, agree) -> bool:
    """The right values in other places. Evidence: at least 4 values, more than half of them
    distinct (so that a permutation is no coincidence), the sorted values agreeing."""
    if expected.size < 4 or float(np.ptp(expected)) == 0.0:
        return False
    # Plenty of distinct values, in another order: a permutation, not a coincidence.
    distinct = len(np.unique(np.round(expected, 6))) > expected.size // 2
    order = lambda array: np.sort(array, axis=None).reshape(expected.shape)  # noqa: E731
    return distinct and agree(order(expected), order(received))


def _axis(axis: int, array: np.ndarray) -> str:
    return _("{axis} (of size {size})", axis=axis - array.ndim, size=array.shape[axis])


def _either(names: list[str]) -> str:
    """ "d or Tk": sizes of the same value, any of which may be meant."""
    return _(" or ").join(names)
