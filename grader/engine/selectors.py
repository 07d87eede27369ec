"""Functions of a case that a record's declarations use: `when=` conditions (where a mistake can
be told apart), changed arguments of `Mistake.of`, and property checks built from a function of
grader.reference (arguments by name from the case, see grader.vocabulary.spec.call_with_case).
"""

from __future__ import annotations

import inspect

import numpy as np

from grader.engine.compare import matches
from grader.i18n import tr
from grader.vocabulary.spec import Case, call_with_case


def _array(case: Case, name: str):
    return case.inputs[name] if name in case.inputs else case.weights[name]


def has_input(name: str):
    """`when=` of a mistake told apart only on the cases given the input `name` (a bias, say)."""
    return lambda case: name in case.inputs


def param_is(name: str, *values, default=None):
    """`when=` of a mistake told apart only where the case's param `name` (`default` where the
    case has none) is one of `values`."""
    return lambda case: case.params.get(name, default) in values


def param_is_not(name: str, *values, default=None):
    """`when=` of a mistake told apart only where the case's param `name` (`default` where the
    case has none) is none of `values`: a mistake that ignores it, say, off its default."""
    return lambda case: case.params.get(name, default) not in values


def several(name: str, axis: int = -1):
    """`when=` of a mistake told apart only where the case's input or weight `name` has more
    than one entry along `axis` (a softmax along the wrong axis is all ones otherwise); an
    array without that axis has not."""

    def holds(case):
        shape = np.shape(_array(case, name))
        return -len(shape) <= axis < len(shape) and shape[axis] > 1

    return holds


def several_rows(name: str):
    """`when=` of a mistake told apart only where the case's input `name` has two axes or more
    and more than one entry along axis -2 (a softmax over that axis is all ones otherwise)."""
    return lambda case: np.ndim(case.inputs[name]) > 1 and np.shape(case.inputs[name])[-2] > 1


def same_size(first: str, second: str, axis: int = -1):
    """`when=` of a mistake told apart only where the case's inputs or weights `first` and
    `second` have the same size along `axis` (swapping them crashes otherwise)."""
    return lambda case: _array(case, first).shape[axis] == _array(case, second).shape[axis]


def square(name: str):
    """`when=` of a mistake told apart only where the case's input or weight `name` is square
    in its last two axes (a kernel that may be left out or transposed, say)."""
    return lambda case: _array(case, name).shape[-1] == _array(case, name).shape[-2]


def given(predicate):
    """`when=` from a predicate of grader.reference whose parameters are named like the case's
    arrays and params (see grader.vocabulary.spec.call_with_case)."""
    return lambda case: bool(call_with_case(predicate, case))


def computed(function):
    """An array of the case (which keys are masked, say): `function` of grader.reference called
    with the case's arrays and params by name."""
    return lambda case: call_with_case(function, case)


def all_of(*whens):
    """`when=` of a mistake told apart only where every one of `whens` holds."""
    return lambda case: all(when(case) for when in whens)


def differ(first, second):
    """`when=` of a mistake told apart only where two functions of the case (`size_of`,
    `param`) differ: a size used in place of another that happens to be equal."""
    return lambda case: first(case) != second(case)


def target_is(*targets: str):
    """A changed argument of `Mistake.of` (or a `when=`): whether the case's target is one of
    `targets` (one reference for a function and the layer built on it)."""
    return lambda case: case.target in targets


def size_of(name: str, axis: int = -1):
    """A changed argument of `Mistake.of` (or a term of `differ`): the size of the case's input
    or weight `name` along `axis` (`scale_dim=size_of("inputs")`: the wrong size)."""
    return lambda case: _array(case, name).shape[axis]


def param(name: str, default=None):
    """A changed argument of `Mistake.of` taken from the case's param `name` (`units=param(
    "input_dim")`: the two swapped)."""
    return lambda case: case.params.get(name, default)


def swapped(first: str, second: str) -> dict:
    """`Mistake.of`'s changed arguments for two of the case's arrays passed the other way round
    (`**swapped("W_s", "W_h")`)."""
    return {first: lambda case: _array(case, second), second: lambda case: _array(case, first)}


def negated(name: str, default=None):
    """A changed argument of `Mistake.of`: the logical not of the case's input, weight or param
    `name` (`default` where the case has none): a boolean mask or flag read the wrong way."""
    return lambda case: np.logical_not(
        {**case.params, **case.weights, **case.inputs}.get(name, default)
    )


def complement(name: str):
    """A changed argument of `Mistake.of`: 1 − the case's input `name` (a gate read the other
    way round)."""
    return lambda case: 1.0 - case.inputs[name]


def input_named(name: str):
    """A changed argument of `Mistake.of`: the case's input or weight `name` (one array passed
    where another should be)."""
    return lambda case: _array(case, name)


def per_target(**formulas):
    """A `Mistake`'s compute: for a case whose target `formulas` names, that formula of the
    case's params by name (`recurrent_complexity=lambda n, d: n * d`); None for the others."""

    def compute(case):
        formula = formulas.get(case.target)
        return None if formula is None else call_with_case(formula, case)

    return compute


def check_of(function):
    """A `Property`'s check from a function of grader.reference whose parameters are named like
    the case's arrays and params, and `output` (the submission's output), and `dtype` (the
    case's, for its tolerance of rounding) where it asks for one."""
    wants_dtype = "dtype" in inspect.signature(function).parameters

    def check(case, output):
        given = {"output": output} | ({"dtype": case.dtype} if wants_dtype else {})
        return call_with_case(function, case, given)

    return check


def agrees_at(index, function, problem: str):
    """A `Property`'s check: the output at `index` (`np.s_[:, 0]`) matches the same entries of
    `function` (of grader.reference, arguments by name from the case), else `problem` in the
    language in use (mark it `N_` where the record writes it, for the catalog). An output of
    another shape there passes: the output check reports it."""

    def check(case, output):
        expected = np.asarray(call_with_case(function, case), dtype=float)
        received = np.asarray(output, dtype=float)
        if received.ndim != expected.ndim or received[index].shape != expected[index].shape:
            return None
        return None if matches(expected[index], received[index], case) else tr(problem)

    return check
