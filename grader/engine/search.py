"""Mistake search: the student's computation found among the reference's mutants.

When a part's output differs and no mistake of its record names the difference, the grader
recomputes the part's NumPy reference (grader.reference) under every mutant of
grader.engine.mutants and names the first mutant that reproduces the student's output: every
value, on every case where the student's output differs, and the expected output on every case
where it does not. That is the evidence a diagnosis needs; with less it says nothing.

All of it runs in the grader's process on the arrays the grader holds: the case's inputs and
the student's outputs, as the child reported them. The student's code never runs again for it.

Its budget is counted in mutant outputs computed (EVALUATIONS), not in seconds, so that the same
outputs get the same words on a laptop, on a loaded batch machine and in a shard; a wall-clock
guard (BUDGET) only stops a search whose cases are unusually costly.

Once per process (a batch, a shard, a gather, `grader watch`), issue 48: the outputs of every
mutant depend only on the reference and the cases, which a batch draws once from its seed, so
each is computed once (`_OUTPUTS`) and what a search found is kept by the outputs it explained
(`_FOUND`): a class hands in the same few mistakes, and the second student with one pays a
lookup. Both live in the grader's memory only, never where a child can reach.

Which reference function computes a part is found, not declared: a function of
grader.reference whose arguments the case names (grader.vocabulary.spec.call_with_case) and whose
output is the expected one on every case of the target. The part's own `Recompute` and the
functions its record's mistakes recompute are tried first.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import math
import os
import re
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from grader.engine import compare, mutants
from grader.engine.diagnosis import SEARCHED, named_sizes
from grader.i18n import N_, _
from grader.vocabulary.spec import Case, call_with_case

# Mutant outputs a part's search may compute (about 4 s on a 2-core laptop), and the seconds
# after which it stops anyway (the part's own timeout is longer).
EVALUATIONS = 6000
BUDGET = 8.0
# Two mistakes at once, when no one mutant explains the output: each of the ANCHORS single
# mutants nearest the student's output (nearer than the expected output is) together with every
# other single mutant, COMPOSED compositions at most (and within the part's BUDGET).
ANCHORS = 3
COMPOSED = 300
# The most places of one kind whose pairs are tried as the same slip made twice.
SAME_KIND_MOST = 6
_OP_WORDS = {
    "softmax": N_("the softmax"),
    "masked_softmax": N_("the softmax"),
    "normalise": N_("the normalisation"),
    "sum": N_("the sum"),
    "max": N_("the maximum"),
    "min": N_("the minimum"),
    "mean": N_("the mean"),
    "argmax": N_("the argmax"),
    "argmin": N_("the argmin"),
    "cumsum": N_("the cumulative sum"),
    "norm": N_("the norm"),
    "logsumexp": N_("the log-sum-exp"),
    "prod": N_("the product"),
}
_FUNCTION_WORDS = {
    "tanh": "tanh",
    "sigmoid": N_("the sigmoid σ"),
    "relu": "ReLU",
    "identity": N_("nothing (the value as it is)"),
    "abs": "|x|",
    "square": "x²",
    "sqrt": "√",
    "exp": "exp",
    "log": "log",
    "maximum": N_("the larger of the two"),
    "minimum": N_("the smaller of the two"),
    "max": N_("the maximum"),
    "min": N_("the minimum"),
    "mean": N_("the mean"),
    "sum": N_("the sum"),
    "argmax": N_("the position of the largest"),
    "argmin": N_("the position of the smallest"),
    "sin": "sin",
    "cos": "cos",
    "softmax": N_("the softmax"),
    "normalise": N_("a division by the sum"),
}


@dataclass(frozen=True)
class Found:
    """A mutant that reproduces the student's output, and what to tell the student."""

    kind: str
    explanation: str


class _Budget:
    """The evaluations a search may still make, and its wall-clock guard."""

    def __init__(self, deadline: float | None):
        self.left = EVALUATIONS
        self.deadline = deadline if deadline is not None else time.monotonic() + BUDGET
        self.timed_out = False  # by the clock: another run may get further

    def spend(self) -> bool:
        """Count one evaluation; False once the budget is spent."""
        self.left -= 1
        if self.left >= 0 and time.monotonic() > self.deadline:
            self.timed_out = True
        return self.left >= 0 and not self.timed_out


# GRADER_SEARCH_MEMORY=off: every search from scratch (benchmarks/course_bench.py compares the
# gradebooks of both).
_MEMORY = os.environ.get("GRADER_SEARCH_MEMORY", "on") != "off"
# What searches found, by everything they depend on (_found_key); at most _FOUND_MOST kept.
_FOUND: dict[str, dict[int, Found]] = {}
_FOUND_MOST = 4096


def explain(part, cases, expected_outputs, received_outputs, deadline: float | None = None):
    """{index of a case: Found} for the cases of `part` whose output differs and that a mutant
    of the part's reference explains (one mutant per target, explaining all of its failing
    cases), or {} where none does. The same part, cases and outputs: the same answer, found
    once per process."""
    key = _found_key(part, cases, expected_outputs, received_outputs) if _MEMORY else None
    if key is not None and key in _FOUND:
        return dict(_FOUND[key])
    budget = _Budget(deadline)
    found = _explain(part, cases, expected_outputs, received_outputs, budget)
    # A search cut short by the wall-clock guard may find more another time: not kept.
    if key is not None and not budget.timed_out:
        if len(_FOUND) >= _FOUND_MOST:
            _FOUND.clear()
        _FOUND[key] = dict(found)
    return found


def _found_key(part, cases, expected_outputs, received_outputs) -> str | None:
    """A digest of everything a search's answer depends on: the part, the language its words
    are in, each case's inputs and weights (and its identity as a case), and the expected and
    received outputs; None where an output is no array (then nothing is kept)."""
    from grader.i18n import language

    digest = hashlib.sha256(f"{part.name}\0{language()}\0{len(cases)}".encode())
    for case, want, got in zip(cases, expected_outputs, received_outputs, strict=True):
        digest.update(_case_digest(case))
        for output in (want, got):
            array = _array(output)
            if output is not None and array is None:
                return None
            if array is None:
                digest.update(b"none")
            else:
                digest.update(f"{array.shape}".encode())
                digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


# A case's digest, by the case object (kept alive beside it, so that its id is not reused).
_CASE_DIGESTS: dict[int, tuple[Case, bytes]] = {}


def _case_digest(case) -> bytes:
    """Every field of a case: its arrays by value, the rest (target, label, params, dtype,
    tolerances, …) by repr."""
    import dataclasses

    known = _CASE_DIGESTS.get(id(case))
    if known is not None and known[0] is case:
        return known[1]
    digest = hashlib.sha256()
    for item in dataclasses.fields(case):
        value = getattr(case, item.name)
        arrays = value.items() if isinstance(value, dict) else [("", value)]
        digest.update(item.name.encode())
        for name, part in sorted(arrays, key=lambda pair: pair[0]):
            if isinstance(part, np.ndarray):
                digest.update(f"{name}{part.dtype}{part.shape}".encode())
                digest.update(np.ascontiguousarray(part).tobytes())
            else:
                digest.update(f"{name}={part!r}".encode())
    if len(_CASE_DIGESTS) >= _FOUND_MOST:
        _CASE_DIGESTS.clear()
    _CASE_DIGESTS[id(case)] = (case, digest.digest())
    return _CASE_DIGESTS[id(case)][1]


def _explain(part, cases, expected_outputs, received_outputs, budget: _Budget):
    by_target: dict[str, list[int]] = {}
    for index, case in enumerate(cases):
        if case.raises or case.variant_of >= 0:
            continue
        by_target.setdefault(case.target, []).append(index)
    found: dict[int, Found] = {}
    for indices in by_target.values():
        usable = []
        for i in indices:
            want, got = _array(expected_outputs[i]), _array(received_outputs[i])
            if want is None or got is None or got.shape != want.shape:
                continue
            usable.append((cases[i], want, got, i))
        failing = [u for u in usable if not compare.matches(u[1], u[2], u[0])]
        if not failing:
            continue
        hit = _search_target(part, usable, failing, budget)
        if hit is None:
            continue
        mutant, pick, words = hit
        for failure in failing:
            # Told on the case's own sizes where they tell it, else as on the first that does.
            own = _words(mutant, pick, [failure]) or words
            found[failure[3]] = Found(mutant.kind, own)
    return found


def _array(output):
    if output is None:
        return None
    try:
        array = np.asarray(output, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return array


def _search_target(part, usable, failing, budget: _Budget):
    reference = find_reference(part, usable)
    if reference is None:
        return None
    function, pick = reference
    failed = {u[3] for u in failing}  # by index: the tuples hold arrays
    passing = [u for u in usable if u[3] not in failed]
    # Small cases first: a wrong mutant is usually rejected on the first one.
    failing = sorted(failing, key=lambda u: u[1].size)
    case, want, got, _index = failing[0]
    # How far the student's output is from the expected one; a mutant nearer to it is a step of
    # the way, to be tried together with another (two mistakes at once).
    base = float(np.mean(np.abs(want - got)))
    near = []
    for mutant in mutants.mutants(function):
        if not budget.spend():
            return None
        value = _mutant_output(mutant, pick, case)
        if value is None or value.shape != got.shape:
            continue
        if compare.same_output(value, got, case):
            if _reproduces(mutant, pick, failing[1:], passing, budget):
                words = _words(mutant, pick, failing)
                if words is not None:
                    return mutant, pick, words
            continue
        if mutant.recipe is not None:
            with np.errstate(all="ignore"):
                distance = float(np.mean(np.abs(value - got)))
            if np.isfinite(distance) and distance < base:
                near.append((distance, len(near), mutant))
    anchors = [mutant for *_order, mutant in sorted(near)[:ANCHORS]]
    singles = [m for m in mutants.mutants(function) if m.recipe is not None]
    # The same slip made in two places first (both residuals of a block): neither place alone
    # need be near the student's output. Only kinds of few places, so that this stays small.
    by_kind: dict[str, list] = {}
    for mutant in singles:
        by_kind.setdefault(mutant.kind, []).append(mutant)
    twice = (
        pair
        for group in by_kind.values()
        if 2 <= len(group) <= SAME_KIND_MOST
        for pair in itertools.combinations(group, 2)
    )
    pairs = itertools.islice(
        itertools.chain(
            twice,
            ((first, second) for first in anchors for second in singles if second is not first),
        ),
        COMPOSED,
    )
    for first, second in pairs:
        if not budget.spend():
            return None
        both = mutants.composed(first, second)
        if both is not None and _reproduces(both, pick, failing, passing, budget):
            words = _words(both, pick, failing)
            if words is not None:
                return both, pick, words
    return None


# Each mutant's output on each case, computed once per process, by (the mutant's identity,
# pick, the case's digest); at most _OUTPUTS_MOST bytes of outputs.
_OUTPUTS: dict[tuple, np.ndarray | None] = {}
_OUTPUTS_MOST = 256 * 2**20
_outputs_bytes = 0


def _mutant_output(mutant, pick, case) -> np.ndarray | None:
    """`_output` of a mutant, from _OUTPUTS where it was computed before. A single mutant is
    made once per process (grader.engine.mutants keeps it), so it is its own identity; a
    composition is made again for each search and is known by its two parts."""
    global _outputs_bytes
    if not _MEMORY:
        return _output(mutant.function, pick, case)
    identity = tuple(id(part) for part in mutant.parts) if mutant.parts else (id(mutant),)
    key = (identity, pick, _case_digest(case))
    if key in _OUTPUTS:
        return _OUTPUTS[key]
    value = _output(mutant.function, pick, case)
    if value is not None:
        value.flags.writeable = False  # shared by every later search
    size = 0 if value is None else value.nbytes
    if _outputs_bytes + size > _OUTPUTS_MOST:
        _OUTPUTS.clear()
        _outputs_bytes = 0
    # The single mutants a key names stay alive in grader.engine.mutants; a composition's
    # parts are such single mutants.
    _OUTPUTS[key] = value
    _outputs_bytes += size
    return value


def _output(function, pick, case) -> np.ndarray | None:
    # On copies of the case's arrays: a mutant may write into a view of an argument, and the
    # case is the one the grader keeps (memoised with the reference's outputs) for the next
    # submission it grades.
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            taken = inspect.signature(function).parameters
            arrays = {
                name: np.array(value, copy=True)
                for source in (case.weights, case.inputs)
                for name, value in source.items()
                if name in taken
            }
            value = call_with_case(function, case, arrays)
        except Exception:  # noqa: BLE001 - a mutant that cannot compute is no explanation
            return None
    if pick is not None:
        if not isinstance(value, tuple) or len(value) <= pick:
            return None
        value = value[pick]
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None


def _reproduces(mutant, pick, failing, passing, budget: _Budget) -> bool:
    for case, _want, got, _i in failing:
        budget.spend()  # counted, never cut short: a mutant half-checked explains nothing
        value = _mutant_output(mutant, pick, case)
        if value is None or not compare.same_output(value, got, case):
            return False
    for case, want, _got, _i in passing:
        budget.spend()
        value = _mutant_output(mutant, pick, case)
        if value is None or value.shape != want.shape or not compare.matches(value, want, case):
            return False
    return True


_REFERENCES: dict[tuple, tuple[Callable, int | None] | None] = {}


def find_reference(part, usable) -> tuple[Callable, int | None] | None:
    """(function of grader.reference, index of its output in a tuple or None) that gives the
    expected output on every usable case, or None."""
    case = usable[0][0]
    key = (part.name, case.target, tuple(sorted(case.inputs)), tuple(sorted(case.weights)))
    known = _REFERENCES.get(key)
    if known is not None and _gives_expected(*known, usable):
        return known
    # None found for these very expected outputs: not searched again (a class of students).
    unknown = key + (hashlib.sha256(b"".join(u[1].tobytes() for u in usable)).hexdigest(),)
    if unknown in _REFERENCES:
        return None
    for function in _candidates(part, case):
        for pick in (None, 0, 1):
            if _gives_expected(function, pick, usable):
                _REFERENCES[key] = (function, pick)
                return function, pick
    _REFERENCES[unknown] = None
    return None


def forward_is_flat(part, case, wrt: str, expected) -> bool:
    """Whether the part's reference gives the same output when the input `wrt` moves a little
    (by about a millionth of its size, at random): a forward pass that is a hard choice of
    `wrt` (argmax, sampling, rounding), whose own gradient is zero wherever it is defined.
    False where no reference function gives `expected` on this case."""
    import dataclasses

    want = _array(expected)
    if want is None or wrt not in case.inputs:
        return False
    found = find_reference(part, [(case, want, want, 0)])
    if found is None:
        return False
    function, pick = found
    base = np.asarray(case.inputs[wrt])
    if not np.issubdtype(base.dtype, np.floating):
        return False
    nudge = np.random.default_rng(0).standard_normal(base.shape) * 1e-6 * (1 + np.abs(base))
    moved = dataclasses.replace(case, inputs={**case.inputs, wrt: base + nudge})
    # Both computed here, in float64: the expected output may be of a float32 case.
    before, after = _output(function, pick, case), _output(function, pick, moved)
    if before is None or after is None or before.shape != after.shape:
        return False
    with np.errstate(all="ignore"):
        change = np.max(np.abs(after - before), initial=0.0)
        return bool(change <= 1e-12 * (1 + np.max(np.abs(before), initial=0.0)))


def _gives_expected(function, pick, usable) -> bool:
    for case, want, _got, _i in usable:
        value = _output(function, pick, case)
        if value is None or value.shape != want.shape or not compare.matches(value, want, case):
            return False
    return True


def _candidates(part, case: Case) -> list[Callable]:
    """The reference functions that could compute `case`: the part's own recomputation and its
    mistakes' functions first, then every other function whose required arguments the case
    names, those named like the target first."""
    package = _reference_package()
    if package is None:
        return []
    first: list[Callable] = []
    if getattr(part, "recompute", None) is not None:
        first.append(part.recompute.function)
    for mistake in getattr(part, "mistakes", ()):
        first.extend(_functions_in(mistake.compute))
    every = []
    for module_name in package.__all__ if hasattr(package, "__all__") else _reference_modules():
        module = __import__(f"grader.reference.{module_name}", fromlist=["_"])
        for value in vars(module).values():
            if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
                every.append(value)
    wanted = _snake(case.target)
    every.sort(key=lambda f: (not f.__name__.startswith(wanted[:6]), f.__name__))
    ordered = list(dict.fromkeys(first + every))
    names = set(case.inputs) | set(case.weights) | set(case.params)
    return [f for f in ordered if _callable_with(f, names)]


def _reference_modules() -> list[str]:
    import pkgutil

    return [m.name for m in pkgutil.iter_modules(_reference_package().__path__)]


def _reference_package():
    """grader.reference where it is this grader's own (a student kit has none: its records
    are compiled to data, and the search is the instructor's grader's), else None."""
    import importlib
    import importlib.util
    from pathlib import Path

    from grader.kit import KIT

    here = KIT / "grader"
    try:
        spec = importlib.util.find_spec("grader.reference")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None or not Path(spec.origin).resolve().is_relative_to(here):
        return None
    return importlib.import_module("grader.reference")


def _functions_in(compute) -> list[Callable]:
    """The grader.reference functions a mistake's `compute` closes over."""
    found = []
    for cell in getattr(compute, "__closure__", None) or ():
        value = cell.cell_contents
        if isinstance(value, types.FunctionType) and value.__module__.startswith(
            "grader.reference"
        ):
            found.append(value)
    return found


def _callable_with(function, names: set[str]) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    required = [
        p.name
        for p in parameters
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    return bool(required) and all(name in names for name in required)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# Words -------------------------------------------------------------------------------------


def _sizes(case: Case) -> dict[int, list[str]]:
    by_value: dict[int, list[str]] = {}
    for name, value in named_sizes(case):
        by_value.setdefault(value, []).append(name)
    return by_value


def _axis_words(shape: tuple, axis, case: Case) -> str | None:
    """ "axis -2 (Tq = 3)" or "axis -1 (of size 5)"; None where the axis does not exist."""
    if axis is None:
        return _("the whole array at once")
    if isinstance(axis, tuple):
        return None
    ndim = len(shape)
    if not -ndim <= axis < ndim:
        return None
    size = shape[axis]
    names = _sizes(case).get(size, [])
    negative = axis - ndim if axis >= 0 else axis
    if len(names) == 1:
        return _("axis {axis} ({name} = {size})", axis=negative, name=names[0], size=size)
    return _("axis {axis} (of size {size})", axis=negative, size=size)


def _names(names: list[str]) -> str:
    return ", ".join(names)


def _words(mutant, pick, failing) -> str | None:
    """What the mutant changed, in the student's words, told on the failing case where it can
    be told most plainly; None where it cannot be told without quoting the reference."""
    facts, kind = mutant.facts, mutant.kind
    if kind == "composed":
        told = [_words(part, pick, failing) for part in mutant.parts]
        if None in told:
            return None
        if told[0] == told[1]:  # one slip made twice: said once (issue 47)
            return _("the same mistake in two places: {words}", words=told[0])
        return _("two mistakes together: {first}; and {second}", first=told[0], second=told[1])
    if kind == "axis":
        for case, _want, _got, _i in failing:
            mutant.seen.clear()
            _output(mutant.function, pick, case)
            shape = mutant.seen.get(facts["site"])
            right = mutant.seen.get(facts["site"] + ":right")
            if shape is None or not isinstance(right, int | np.integer):
                continue
            op = _(_OP_WORDS.get(facts["op"], N_("the reduction")))
            right_words = _axis_words(shape, int(right), case)
            if facts["axis"] == "batch":
                if right_words is None or shape[0] == 1:
                    continue
                return _(
                    "{op} runs over the whole batch together (every example at once); it "
                    "must run over {right} of each example on its own",
                    op=op,
                    right=right_words,
                )
            used_words = _axis_words(shape, facts["axis"], case)
            if used_words is None or right_words is None:
                continue
            if facts["axis"] is not None and _same_axis(shape, facts["axis"], int(right)):
                continue
            return _(
                "{op} runs over {used}; it must run over {right}",
                op=op,
                used=used_words,
                right=right_words,
            )
        return None
    if kind == "function":
        used, right = facts["used"], facts["right"]
        return _(
            "you used {used} where the formula has {right}",
            used=_(_FUNCTION_WORDS.get(used, used)),
            right=_(_FUNCTION_WORDS.get(right, right)),
        )
    names = facts.get("names") or []
    if kind == "term dropped" and facts.get("subtracted"):
        if not names:
            return _(
                "your computation counts a term once more than the formula here: the formula "
                "subtracts it (a − … left out, or a term counted in a sum that must leave it out)"
            )
        return _(
            "your computation counts {names} once more than the formula here: the formula "
            "subtracts it (a − {names} left out, or {names} counted in a sum that must leave it "
            "out)",
            names=_names(names),
        )
    if kind == "factor dropped":
        if not names:
            return _(
                "a factor of one term is missing: your computation counts that term once where "
                "the formula counts it several times (once per pair, per position, per item)"
            )
        return _(
            "a term is missing its factor {names}: the formula multiplies that term by {names}",
            names=_names(names),
        )
    if kind == "term dropped":
        if not names:
            return _("a term of the formula is missing from your computation")
        return _(
            "the term with {names} is missing: the formula uses {names} here", names=_names(names)
        )
    if kind == "term doubled":
        if not names:
            return _("a term of the formula is counted twice")
        return _("the term with {names} is counted twice", names=_names(names))
    if kind == "sign":
        if not names:
            return _("a sign is wrong: a term is subtracted where it is added, or the reverse")
        return _(
            "the term with {names} has the wrong sign (added where it is subtracted, or the "
            "reverse)",
            names=_names(names),
        )
    if kind == "reversed":
        return _("a difference is taken the other way round (b − a for a − b)")
    if kind == "division dropped":
        if not names:
            return _("a division is missing (a scale or a normalisation)")
        return _("the division by {names} is missing", names=_names(names))
    if kind == "multiplied":
        return _(
            "you multiplied where the formula divides{by}",
            by=_(" by {names}", names=_names(names)) if names else "",
        )
    if kind == "divided":
        return _(
            "you divided by {names} where the formula multiplies by it",
            names=_names(names),
        )
    if kind == "integer division":
        return _(
            "a division drops its fraction: // (or int()) where the formula divides exactly "
            "(in Python 3, / keeps the fraction)"
        )
    if kind == "exponent":
        if facts.get("factor") == 2.0:
            return _(
                "the power{of} has twice the formula's exponent: look at how the exponent is "
                "computed (a numerator counted twice, or a denominator halved)",
                of=_(" of {names}", names=_names(names)) if names else "",
            )
        return _(
            "the power{of} has half the formula's exponent: look at how the exponent is "
            "computed (a numerator counted once where it is doubled, or a denominator doubled)",
            of=_(" of {names}", names=_names(names)) if names else "",
        )
    if kind == "divided twice":
        return _(
            "you divided twice{by}: once is right",
            by=_(" by {names}", names=_names(names)) if names else "",
        )
    if kind == "root":
        if facts.get("root"):
            return _(
                "you divided by the square root{of} where the formula divides by the value itself",
                of=_(" of {names}", names=_names(names)) if names else "",
            )
        return _("a square root is missing: the formula takes √ here")
    if kind == "transposed":
        return _(
            "{names} is used transposed: use it as given, of the shape the docstring states",
            names=_names(names),
        )
    if kind == "transpose dropped":
        return _("a transpose is missing: two axes must swap here (a matrix and its ᵀ)")
    if kind in ("arguments swapped", "indices swapped"):
        return _(
            "two things are swapped: the roles of two inputs or of two positions (rows for "
            "columns, queries for keys)"
        )
    if kind == "mask inverted":
        return _("the mask is inverted: it keeps what it must hide and hides what it must keep")
    if kind == "boundary":
        if facts["strict"]:
            return _(
                "off by one at a boundary: a value exactly on the boundary is counted as inside, "
                "where it must be outside (≤ or ≥ where < or > is right)"
            )
        return _(
            "off by one at a boundary: a value exactly on the boundary is left out, where it "
            "must be counted (< or > where ≤ or ≥ is right)"
        )
    if kind == "off by one":
        return _("an index or a range is off by one (one position too far or too short)")
    if kind == "twice":
        op = _(_OP_WORDS.get(facts["op"], N_("the normalisation")))
        return _("{op} is applied twice: the values are normalised a second time", op=op)
    if kind == "constant":
        used, right = abs(facts["used"]), abs(facts["value"])
        return _(
            "a constant factor of the formula is {used:g} in your computation where it is "
            "{right:g} (a ½ left out, or counted twice)",
            used=used,
            right=right,
        )
    if kind == "size":
        return _size_words(facts, failing)
    if kind == "first example's input":
        return _(
            "every example was computed with the first example's {name}: each example of a "
            "batch must use its own (a broadcast that pairs {name} of shape (B, …) with the "
            "wrong axis, or an index 0 where the example's index belongs, does this)",
            name=facts["name"],
        )
    if kind == "moved outward":
        function = facts["function"]
        return _(
            "{function} is applied to the result of the product it feeds: the formula applies "
            "{function} first, then multiplies (vᵀ tanh(h), not tanh(vᵀh))",
            function=_(_FUNCTION_WORDS.get(function, function)),
        )
    if kind == "applied to one term":
        return _(
            "{function} is applied to one term of the sum only: the formula applies it to the "
            "whole sum, {function}(a + b), not {function}(a) + b (in a post-LN block: the norm "
            "of x + sublayer(x), not x + norm(sublayer(x)))",
            function=_(_FUNCTION_WORDS.get(facts["function"], facts["function"])),
        )
    if kind == "argument swapped":
        return _(
            "you used {used} where the formula has {right} (one input taken for another of "
            "the same kind)",
            used=facts["used"],
            right=facts["right"],
        )
    if kind == "size off by one":
        return _size_off_words(facts, failing)
    if kind == "extra scale":
        return _extra_scale_words(facts, failing)
    if kind == "transformed residual":
        function = facts["function"]
        return _(
            "the residual adds the input after {function}: a residual carries the input itself "
            "past the branch, x + sublayer({short}(x)), not {short}(x) + sublayer({short}(x)) "
            "(in a pre-LN block the sum takes x, not LN(x))",
            function=_("the layer norm")
            if "norm" in function
            else _(_FUNCTION_WORDS.get(function, function)),
            short="LN" if "norm" in function else "f",
        )
    if kind == "axis dropped":
        name = facts.get("name")
        return _(
            "{array} lacks an axis the formula gives it (x[:, None] or expand_dims): a "
            "broadcast pairs axes from the right, so without it the array's axes meet the wrong "
            "axes of the other (e.g. a (B, Tk) mask against (B, Tq, Tk) scores lines B up with "
            "Tq: wrong values where B = Tq, an error elsewhere)",
            array=name or _("an array"),
        )
    if kind == "order":
        # Two steps swapped can coincide with many slips on one case (a broadcast that lines
        # up B with Tq where B = Tq): named only where two failing cases agree.
        if len(failing) < 2:
            return None
        return _(
            "two steps are in the wrong order: each step is right, but the formula applies "
            "them the other way round"
        )
    return None


def _sizes_of(case, pairs) -> list[int] | None:
    """The sizes (input name, axis) pairs name on the case's arrays; None where one is not
    there."""
    arrays = {**case.params, **case.weights, **case.inputs}
    try:
        return [int(np.shape(arrays[name])[axis]) for name, axis in pairs]
    except (KeyError, IndexError, TypeError):
        return None


def _size_words(facts, failing) -> str | None:
    """ "you used Tq = 3 where the formula needs S = 9", told on a failing case where the two
    sizes differ; None where no case tells them apart by name or value."""
    told = None
    for case, _want, _got, _i in failing:
        used, right = _sizes_of(case, facts["used"]), _sizes_of(case, facts["right"])
        if used is None or right is None:
            continue
        if math.prod(used) == math.prod(right):
            continue
        by_value = _sizes(case)
        words = _(
            "a size is taken from the wrong input or axis: you used {used} where the formula "
            "needs {right}",
            used=_size_name(by_value, used),
            right=_size_name(by_value, right),
        )
        if all(len(by_value.get(size, [])) == 1 for size in used + right):
            return words  # told on the case whose sizes all have names of their own
        told = told or words
    return told


def _size_off_words(facts, failing) -> str | None:
    """ "you used S − 1 = 8 where the formula needs S = 9"."""
    for case, _want, _got, _i in failing:
        sizes = _sizes_of(case, [facts["size"]])
        if sizes is None:
            continue
        size = sizes[0]
        found = _sizes(case).get(size, [])
        called = found[0] if len(found) == 1 else _("the size")
        step = facts["step"]
        return _(
            "a size is one off: you used {name} {sign} 1 = {used} where the formula needs "
            "{name} = {size} (a length taken as the last index, or the reverse)",
            name=called,
            sign="−" if step < 0 else "+",
            used=size + step,
            size=size,
        )
    return None


def _extra_scale_words(facts, failing) -> str | None:
    """ "an extra division by √d = 2", told on a failing case where the size has a name."""
    told = None
    for case, _want, _got, _i in failing:
        size = _sizes_of(case, facts["used"])
        if size is None:
            continue
        by_value = _sizes(case)
        named = _size_name(by_value, size)
        if facts.get("root"):
            words = _(
                "the result is divided by √({size}) where the formula has no such scale (the "
                "1/√d of scaled dot-product attention carried over?)",
                size=named,
            )
        else:
            words = _(
                "the result is divided by {size} where the formula has no such scale", size=named
            )
        if all(len(by_value.get(s, [])) == 1 for s in size):
            return words
        told = told or words
    return told


def _size_name(by_value: dict[int, list[str]], factors: list[int]) -> str:
    """ "S = 9", "H·d = 6", or "a size of 6" where a factor has no single name."""
    names = [by_value.get(size, []) for size in factors]
    if all(len(found) == 1 for found in names):
        return f"{'·'.join(found[0] for found in names)} = {math.prod(factors)}"
    return _("a size of {size}", size=math.prod(factors))


def _same_axis(shape, first, second) -> bool:
    ndim = len(shape)
    return first % ndim == second % ndim


def describe(found: Found) -> str:
    """The name results keep for a mistake found by search."""
    return SEARCHED + found.kind


# Where it goes wrong, when no mutant explains it ------------------------------------------


def _size(case: Case, *names: str) -> int | None:
    for name, value in named_sizes(case):
        if name in names:
            return value
    return None


def _batched(case: Case) -> bool | None:
    size = _size(case, "B", "batch")
    return None if size is None else size > 1


def _queries_keys_differ(case: Case) -> bool | None:
    tq, tk = _size(case, "Tq", "m", "N"), _size(case, "Tk", "n", "M")
    return None if tq is None or tk is None else tq != tk


def _single(case: Case) -> bool | None:
    found = [value for _name, value in named_sizes(case)]
    return None if not found else 1 in found


def _float32(case: Case) -> bool:
    return case.dtype in ("float32", "float16", "bfloat16")


# (what tells the cases apart, what it says when it alone separates failing from passing)
SEPARATORS = (
    (
        _batched,
        N_(
            "it fails only on cases with more than one example (B > 1) and passes those with "
            "one: the examples of a batch mix, or one example's values are used for all"
        ),
    ),
    (
        _queries_keys_differ,
        N_(
            "it fails only where the numbers of queries and keys differ and passes where they "
            "are equal: queries and keys (or their lengths) are swapped somewhere"
        ),
    ),
    (
        compare.masks_something,
        N_(
            "it fails only on the cases with a mask or lengths and passes the others: the "
            "masking is wrong, the rest is right"
        ),
    ),
    (
        _single,
        N_(
            "it fails only on cases where some size is 1: a squeeze, or a broadcast that "
            "goes wrong when an axis has length 1"
        ),
    ),
    (
        _float32,
        N_(
            "it fails only in float32 and passes in float64: precision is lost (a cast, a "
            "float32 constant, an unstable formula) or the dtype changes on the way"
        ),
    ),
)


# The fewest failing cases with a feature, and passing ones without it, before the feature is
# said to separate them: on one case of each, any difference of the two is a "separator".
SEPARATING_CASES = 2


def separating(cases, failing: list[int], passing: list[int]) -> str | None:
    """What alone tells the failing cases of a part from its passing ones (every failing case
    has it, no passing case does, and no other feature splits them so), or None. Evidence: at
    least SEPARATING_CASES failing cases and as many passing ones."""
    if len(failing) < SEPARATING_CASES or len(passing) < SEPARATING_CASES:
        return None
    splits = []
    for feature, words in SEPARATORS:
        fail = [feature(cases[i]) for i in failing]
        ok = [feature(cases[i]) for i in passing]
        if None in fail or None in ok:
            continue
        if all(fail) and not any(ok):
            splits.append((feature, words))
    if len(splits) != 1 or _confounded(
        splits[0][0], [cases[i] for i in failing], [cases[i] for i in passing]
    ):
        return None
    return _(splits[0][1])


def _confounded(feature, failing: list, passing: list) -> bool:
    """Whether another size of the cases (one above 1 in exactly the failing ones, say H where
    the feature is B > 1) splits them just as well: then the feature is not what fails."""
    own = {"B"} if feature is _batched else set()
    names = {name for case in failing + passing for name, _v in named_sizes(case)} - own
    for name in names:
        fail = [dict(named_sizes(case)).get(name) for case in failing]
        ok = [dict(named_sizes(case)).get(name) for case in passing]
        if None in fail or None in ok:
            continue
        if all(v > 1 for v in fail) and not any(v > 1 for v in ok):
            return True
    return False


def first_example_only(expected, received, cases, failing: list[int]) -> str | None:
    """Words for outputs right on the first example of every failing batch and wrong on
    another (each failing case has a batch of several), or None."""
    if not failing:
        return None
    for i in failing:
        want, got = _array(expected[i]), _array(received[i])
        case = cases[i]
        if want is None or got is None or want.shape != got.shape or want.ndim < 2:
            return None
        if not _batched(case) or want.shape[0] < 2:
            return None
        if not compare.matches(want[:1], got[:1], case):
            return None
        # Every other example mostly wrong (as when all get the first's values), not a value.
        for index in range(1, want.shape[0]):
            wrong = ~compare.close(want[index], got[index], case)
            if wrong.mean() <= 0.5:
                return None
    return _(
        "only the first example of each batch is right: the others get wrong values (an "
        "index 0 where the batch index belongs, or a loop over the batch that stops early)"
    )
