"""Wrong computations derived from a NumPy reference by a small catalogue of operators.

A mutant is the reference function with one change a student could have made: the axis of a
normalisation or a reduction; an elementwise function for another of its family (tanh for the
sigmoid, |x| for x²); a term or factor left out or counted twice; two arguments or two indices
swapped, a transpose missing or added; a comparison or a constant index off by one; two
consecutive steps in the other order; a normalisation applied twice. Each is made by editing
the syntax tree of the function's source (or of a helper of grader.reference it calls) and
compiling the result in a copy of the function's globals: the reference itself never changes.

A mutant knows how to say what it changed in a student's words (`Mutant.words`), from what it
recorded about the array it touched when it ran (the shape a softmax ran over, say), never by
quoting the reference's code.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

# Functions of a family a student confuses with one another, as names a call can have.
FAMILIES = (
    ("tanh", "sigmoid", "relu", "identity"),
    ("abs", "square"),
    ("sqrt", "identity", "square"),
    ("exp", "identity"),
    ("log", "identity"),
    ("maximum", "minimum"),
    ("max", "min", "mean", "sum"),
    ("argmax", "argmin"),
    ("sin", "cos"),
    ("softmax", "sigmoid", "normalise"),
)
# Calls whose `axis` picks what is normalised or reduced.
REDUCERS = frozenset(
    {
        "sum",
        "max",
        "min",
        "mean",
        "prod",
        "std",
        "var",
        "argmax",
        "argmin",
        "cumsum",
        "norm",
        "softmax",
        "masked_softmax",
        "logsumexp",
        "any",
        "all",
        "linalg.norm",
    }
)
NORMALISATIONS = frozenset({"softmax", "masked_softmax", "normalise"})
AXES = (-1, -2, -3, 0, 1, 2)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


def _relu(x):
    return np.maximum(x, 0.0)


def _identity(x, *args, **kwargs):
    return x


def _softmax(x, axis=-1, **kwargs):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _normalise(x, axis=-1, **kwargs):
    x = np.asarray(x, dtype=np.float64)
    return x / x.sum(axis=axis, keepdims=True)


def _square(x):
    return np.square(x)


def _first_rows(x):
    """x with every example (along the first axis) replaced by the first one."""
    array = np.asarray(x)
    if array.ndim == 0 or array.shape[0] < 2:
        return x
    return np.broadcast_to(array[:1], array.shape).copy()


# The stand-ins a mutant calls, by the name FAMILIES gives them (NumPy's where it has one).
STAND_INS = {
    "sigmoid": _sigmoid,
    "relu": _relu,
    "identity": _identity,
    "softmax": _softmax,
    "normalise": _normalise,
    "square": _square,
    "first_rows": _first_rows,
}
PREFIX = "_mutant_"


@dataclass
class Mutant:
    """One changed reference. `function` computes like the reference but for the change;
    `kind` is the operator; `where` the name of the reference function changed (the top one,
    or a helper it calls, `depth` calls down); `facts` what the change needs to be told in
    words (filled in when `function` runs: the shape it touched)."""

    kind: str
    where: str
    depth: int
    function: Callable
    facts: dict = field(default_factory=dict)
    seen: dict = field(default_factory=dict)
    # How it was made, to make it again together with another (`composed`): the function
    # edited, the path of helper names to it from the top one, the index of the node edited
    # (in ast.walk order) and the edit. None for a reordering of steps or a composition.
    recipe: tuple | None = None
    # The single mutants a composition is made of.
    parts: tuple = ()


def _call_name(node: ast.Call) -> str:
    """ "sum" for np.sum(...), x.sum(...), sum(...); "linalg.norm" for np.linalg.norm."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Attribute) and func.value.attr == "linalg":
            return "linalg." + func.attr
        return func.attr
    return ""


def _int_of(node) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def _const(value) -> ast.expr:
    if isinstance(value, int) and value < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    if isinstance(value, tuple):
        return ast.Tuple([_const(v) for v in value], ast.Load())
    return ast.Constant(value)


def _stand_in(name: str) -> ast.expr:
    if name in STAND_INS:
        return ast.Name(PREFIX + name, ast.Load())
    return ast.Attribute(ast.Name(PREFIX + "np", ast.Load()), name, ast.Load())


def _record(site: str, node: ast.expr) -> ast.expr:
    """`node`, recording the shape of its value under `site` when the mutant runs."""
    return ast.Call(ast.Name(PREFIX + "record", ast.Load()), [ast.Constant(site), node], [])


def _free_names(node) -> list[str]:
    return sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)})


# An edit: (kind, facts, a function that changes the copied tree's node in place or returns
# its replacement).
Edit = tuple[str, dict, Callable[[ast.AST], ast.AST]]


def _edits(node: ast.AST, parameters: set[str], scope: dict) -> Iterator[Edit]:
    """Every change of the catalogue that applies to `node` (`scope`: the function's globals,
    where the helpers it calls are found)."""
    if isinstance(node, ast.Call):
        yield from _call_edits(node, scope)
        yield from _applied_to_one_term_edits(node)
        if _call_name(node).split(".")[-1] in _PRODUCTS:
            yield from _extra_scale_edits(parameters)
            yield from _moved_outward_edits(node, [f"args.{i}" for i in range(len(node.args))])
    elif isinstance(node, ast.BinOp):
        yield from _binop_edits(node, parameters)
        if isinstance(node.op, (ast.Mult, ast.MatMult)):
            yield from _extra_scale_edits(parameters)
            yield from _moved_outward_edits(node, ["left", "right"])
        if isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            yield from _name_swap_edits(node, parameters)
        if isinstance(node.op, ast.Add):
            yield from _transformed_residual_edits(node)
    elif isinstance(node, ast.Assign):
        yield from _written_swap_edits(node, parameters)
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        flips = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
        flip = flips.get(type(node.ops[0]))
        if flip is not None:
            strict = type(node.ops[0]) in (ast.Lt, ast.Gt)

            def compare(n, flip=flip):
                n.ops = [flip()]
                return n

            yield "boundary", {"strict": strict}, compare
    elif isinstance(node, ast.Attribute) and node.attr == "T":
        yield "transpose dropped", {}, lambda n: n.value
    elif isinstance(node, ast.Subscript):
        yield from _size_edits(node, parameters)
        yield from _subscript_edits(node, parameters)
    elif isinstance(node, ast.Constant) and type(node.value) is float and node.value != 0.0:
        for factor in (2.0, 0.5):

            def scale(n, factor=factor):
                return ast.Constant(n.value * factor)

            yield "constant", {"value": node.value, "used": node.value * factor}, scale


def _name_swap_edits(node: ast.BinOp, parameters: set[str]) -> Iterator[Edit]:
    """A number of the arithmetic taken from another argument (d_q where the formula counts
    d_k): an operand that is an argument's name, replaced by each other argument."""
    for side in ("left", "right"):
        operand = getattr(node, side)
        if not (isinstance(operand, ast.Name) and operand.id in parameters):
            continue
        for other in sorted(parameters - {operand.id}):

            def swap(n, side=side, other=other):
                setattr(n, side, ast.Name(other, ast.Load()))
                return n

            yield "argument swapped", {"used": other, "right": operand.id}, swap


def _written_swap_edits(node: ast.Assign, parameters: set[str]) -> Iterator[Edit]:
    """What is written taken from another input (a cache's value half written with the key):
    an assignment whose value is an argument, or a piece of one (`value[b, 0]`), with that
    argument replaced by each other argument."""
    value = node.value
    base = value.value if isinstance(value, ast.Subscript) else value
    if not (isinstance(base, ast.Name) and base.id in parameters):
        return
    for other in sorted(parameters - {base.id}):

        def swap(n, other=other):
            taken = n.value.value if isinstance(n.value, ast.Subscript) else n.value
            taken.id = other
            return n

        yield "argument swapped", {"used": other, "right": base.id}, swap


def _applied_to_one_term_edits(node: ast.Call) -> Iterator[Edit]:
    """f(a + b) taken as f(a) + b or a + f(b): a function of a sum (a post-LN block's norm of
    the residual sum, tanh of the summed projections) applied to one term only."""
    if len(node.args) != 1 or node.keywords:
        return
    inner = node.args[0]
    if not (isinstance(inner, ast.BinOp) and isinstance(inner.op, (ast.Add, ast.Sub))):
        return
    short = _call_name(node).split(".")[-1]
    if not short:
        return
    for side in ("left", "right"):

        def inward(n, side=side):
            total = n.args[0]
            term = getattr(total, side)
            setattr(total, side, ast.Call(n.func, [term], []))
            return total

        yield "applied to one term", {"function": short, "side": side}, inward


def _transformed_residual_edits(node: ast.BinOp) -> Iterator[Edit]:
    """a + f(g(a)) taken as g(a) + f(g(a)): a residual that adds the input as transformed for
    the branch (a pre-LN block's residual from the normalised input, not the input itself).
    For each side that holds a plain name `a` outside any call while the other side passes
    g(a), a call on `a` alone, to another call f."""
    for side, other in (("left", "right"), ("right", "left")):
        plain = {n.id for n in _outside_calls(getattr(node, side)) if isinstance(n, ast.Name)}
        nested = [
            argument
            for outer in ast.walk(getattr(node, other))
            if isinstance(outer, ast.Call)
            for argument in outer.args
            if isinstance(argument, ast.Call)
        ]
        for call in nested:
            if len(call.args) != 1 or call.keywords:
                continue
            argument, short = call.args[0], _call_name(call).split(".")[-1]
            if not (isinstance(argument, ast.Name) and argument.id in plain and short):
                continue

            def transformed(n, side=side, call=call, name=argument.id):
                def swap(term):
                    if isinstance(term, ast.Name) and term.id == name:
                        return _copied(call)
                    if not isinstance(term, ast.Call):
                        for name_of_field, value in ast.iter_fields(term):
                            if isinstance(value, ast.AST):
                                setattr(term, name_of_field, swap(value))
                    return term

                setattr(n, side, swap(getattr(n, side)))
                return n

            yield "transformed residual", {"function": short}, transformed


def _outside_calls(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of `node` that are not inside a call."""
    yield node
    if isinstance(node, ast.Call):
        return
    for child in ast.iter_child_nodes(node):
        yield from _outside_calls(child)


# The calls that form a product (scores, a weighted sum), where a scale may be added.
_PRODUCTS = frozenset({"einsum", "matmul", "dot", "tensordot", "inner", "outer"})


def _extra_scale_edits(parameters: set[str]) -> Iterator[Edit]:
    """A product divided by a size it is not divided by in the formula, or by its root: the
    1/√d of scaled dot-product attention carried where the formula scales by β or not at all.
    The size is the last axis of an input (d); one that is no array makes no mutant."""
    for name in sorted(parameters):
        for root in (True, False):

            def extra(n, name=name, root=root):
                shape = ast.Call(_stand_in("shape"), [ast.Name(name, ast.Load())], [])
                size = ast.Subscript(shape, _const(-1), ast.Load())
                if root:
                    size = ast.Call(_stand_in("sqrt"), [size], [])
                return ast.BinOp(n, ast.Div(), size)

            yield "extra scale", {"used": [(name, -1)], "root": root}, extra


# Elementwise functions a student may apply to a product's result instead of to its factor.
_ELEMENTWISE = frozenset({"tanh", "sigmoid", "relu", "exp", "abs", "sqrt", "log", "square"})


def _moved_outward_edits(node, slots: list[str]) -> Iterator[Edit]:
    """f(a) · b taken as f(a · b): a nonlinearity applied after the product it feeds
    (tanh(vᵀh) for vᵀ tanh(h)). `slots` name the product's operands ("left", "args.1"); an
    operand `f(a) if flag else a` (a reference's switch for a known mistake) counts as f(a)."""
    for slot in slots:
        operand = _slot(node, slot)
        inner = operand.body if isinstance(operand, ast.IfExp) else operand
        if not isinstance(inner, ast.Call) or len(inner.args) != 1:
            continue
        short = _call_name(inner).split(".")[-1]
        if short not in _ELEMENTWISE:
            continue

        def move(n, slot=slot):
            taken = _slot(n, slot)
            call = taken.body if isinstance(taken, ast.IfExp) else taken
            _set_slot(n, slot, call.args[0])
            return ast.Call(call.func, [n], [])

        yield "moved outward", {"function": short}, move


def _slot(node, slot: str):
    if slot.startswith("args."):
        return node.args[int(slot[5:])]
    return getattr(node, slot)


def _set_slot(node, slot: str, value) -> None:
    if slot.startswith("args."):
        node.args[int(slot[5:])] = value
    else:
        setattr(node, slot, value)


def _call_edits(node: ast.Call, scope: dict) -> Iterator[Edit]:
    name = _call_name(node)
    short = name.split(".")[-1]
    keywords = {k.arg: k for k in node.keywords if k.arg}
    method = isinstance(node.func, ast.Attribute) and not _is_module(node.func.value)
    position = _axis_position(node, method, scope)
    axis_node = _axis_value(node, position) if position is not None else None
    default = _axis_default(node, scope) if position is not None and axis_node is None else None
    if axis_node is None and default is not None:
        axis_node = _const(default)
    if axis_node is not None:
        current = _int_of(axis_node)
        site = f"axis@{id(node)}"
        for axis in [a for a in AXES if a != current] + [None, "batch"]:

            def change(n, axis=axis, site=site, method=method, position=position, default=default):
                original = _axis_value(n, position)
                if original is None:
                    original = _const(default)
                if method:
                    n.func.value = _record(site, n.func.value)
                elif n.args:
                    n.args[0] = _record(site, n.args[0])
                chosen = ast.Call(
                    ast.Name(PREFIX + "axis", ast.Load()),
                    [ast.Constant(site), original, ast.Constant(axis)],
                    [],
                )
                _set_axis(n, chosen, position)
                return n

            facts = {"op": short, "axis": axis, "site": site}
            yield "axis", facts, change
    # A function for another of its family.
    for family in FAMILIES:
        if short in family and (isinstance(node.func, ast.Attribute) or short in STAND_INS):
            if short in ("max", "min", "sum", "mean") and axis_node is None and not node.args:
                break  # x.max() of everything: another reduction is no confusion of a student
            for other in family:
                if other == short:
                    continue

                def swap(n, other=other):
                    if isinstance(n.func, ast.Attribute) and not _is_module(n.func.value):
                        # x.max(axis=...) -> np.min(x, axis=...)
                        n.args = [n.func.value, *n.args]
                    n.func = _stand_in(other)
                    return n

                yield "function", {"used": other, "right": short}, swap
            break
    # A normalisation applied twice.
    if short in NORMALISATIONS and node.args:

        def twice(n):
            inner = _copied(n)
            n.args = [inner, *n.args[1:]]
            return n

        yield "twice", {"op": short}, twice
    # Two arguments swapped (of the same kind: both plain names or both expressions).
    if len(node.args) >= 2 and short not in REDUCERS and short not in ("where", "full", "zeros"):

        def swap_args(n):
            n.args[0], n.args[1] = n.args[1], n.args[0]
            return n

        yield "arguments swapped", {"op": short}, swap_args
    if short == "where" and len(node.args) == 3:

        def polarity(n):
            n.args[1], n.args[2] = n.args[2], n.args[1]
            return n

        yield "mask inverted", {}, polarity
    if short in ("swapaxes", "transpose", "moveaxis") and node.args:
        yield "transpose dropped", {}, lambda n: n.args[0]
    if short == "expand_dims" and node.args:
        yield "axis dropped", {"name": ""}, lambda n: n.args[0]
    # Constant offsets of diagonals, ranges and positions: off by one.
    for key in ("k",):
        if key in keywords and _int_of(keywords[key].value) is not None:
            value = _int_of(keywords[key].value)
            for delta in (1, -1):

                def shift(n, delta=delta, key=key, value=value):
                    for k in n.keywords:
                        if k.arg == key:
                            k.value = _const(value + delta)
                    return n

                yield "off by one", {"delta": delta}, shift
    if short in ("range", "arange") and node.args:
        for index in range(min(len(node.args), 2)):
            for delta in (1, -1):

                def shift_bound(n, index=index, delta=delta):
                    n.args[index] = ast.BinOp(n.args[index], ast.Add(), _const(delta))
                    return n

                yield "off by one", {"delta": delta}, shift_bound


def _is_module(node) -> bool:
    return isinstance(node, ast.Name) and node.id in ("np", "numpy", "math")


# Where a call takes its axis when it is not given by name: np.sum(x, 0), x.sum(0).
POSITIONAL_AXIS = frozenset({"sum", "max", "min", "mean", "argmax", "argmin", "cumsum", "softmax"})


def _axis_position(node: ast.Call, method: bool, scope: dict) -> int | None:
    """Where the call takes its axis: its position among the positional arguments, -1 when
    only by name; None when the call has no axis (it is no reduction or normalisation)."""
    name = _call_name(node)
    callee = scope.get(node.func.id) if isinstance(node.func, ast.Name) else None
    if isinstance(callee, types.FunctionType):
        try:
            names = list(inspect.signature(callee).parameters)
        except (TypeError, ValueError):
            return None
        return names.index("axis") if "axis" in names else None
    if name in POSITIONAL_AXIS:
        return 0 if method else 1
    return -1 if name in REDUCERS else None


def _axis_default(node: ast.Call, scope: dict) -> int | None:
    """The default axis of a helper called without one (softmax(x) runs over -1)."""
    callee = scope.get(node.func.id) if isinstance(node.func, ast.Name) else None
    if not isinstance(callee, types.FunctionType):
        return None
    try:
        parameter = inspect.signature(callee).parameters.get("axis")
    except (TypeError, ValueError):
        return None
    default = None if parameter is None else parameter.default
    return default if type(default) is int else None


def _axis_value(node: ast.Call, position: int):
    """The expression of a call's axis, or None where it is not given (a reduction of
    everything, or the callee's default)."""
    for k in node.keywords:
        if k.arg == "axis":
            return k.value
    if 0 <= position < len(node.args):
        return node.args[position]
    return None


def _set_axis(node: ast.Call, value: ast.expr, position: int) -> None:
    for k in node.keywords:
        if k.arg == "axis":
            k.value = value
            return
    if 0 <= position < len(node.args):
        node.args[position] = value
    else:
        node.keywords.append(ast.keyword("axis", value))


def _binop_edits(node: ast.BinOp, parameters: set[str]) -> Iterator[Edit]:
    op = type(node.op)
    left, right = _free_names(node.left), _free_names(node.right)
    named = lambda names: [n for n in names if n in parameters]  # noqa: E731
    if op in (ast.Add, ast.Sub):
        # A subtracted term left out reads, from the student's side, as one counted once too
        # often (Σ_{j≥i} for Σ_{j>i}): the words say both.
        yield "term dropped", {"names": named(right), "subtracted": op is ast.Sub}, lambda n: n.left
        yield (
            "term dropped",
            {"names": named(left)},
            lambda n: n.right if isinstance(n.op, ast.Add) else ast.UnaryOp(ast.USub(), n.right),
        )

        def double(n):
            n.right = ast.BinOp(ast.Constant(2.0), ast.Mult(), n.right)
            return n

        yield "term doubled", {"names": named(right)}, double
        other = ast.Sub if op is ast.Add else ast.Add

        def sign(n, other=other):
            n.op = other()
            return n

        yield "sign", {"names": named(right), "minus": op is ast.Add}, sign
    if op is ast.Sub:

        def reverse(n):
            n.left, n.right = n.right, n.left
            return n

        yield "reversed", {"op": "-"}, reverse
    if op is ast.Mult:
        yield "factor dropped", {"names": named(right)}, lambda n: n.left
        yield "factor dropped", {"names": named(left)}, lambda n: n.right
        # A factor that is an argument of its own (β, a scale) used as a divisor: a temperature
        # where the formula has an inverse temperature.
        for side, other in (("right", "left"), ("left", "right")):
            operand = getattr(node, side)
            if isinstance(operand, ast.IfExp):  # (1.0 if outside else beta): the value's names
                names = named(_free_names(operand.body) + _free_names(operand.orelse))
            else:
                names = [operand.id] if isinstance(operand, ast.Name) else []
            if names and all(name in parameters for name in names):

                def divided(n, side=side, other=other):
                    return ast.BinOp(getattr(n, other), ast.Div(), getattr(n, side))

                yield "divided", {"names": names}, divided
    if op is ast.Div:
        yield "division dropped", {"names": named(right)}, lambda n: n.left

        def multiply(n):
            n.op = ast.Mult()
            return n

        yield "multiplied", {"names": named(right)}, multiply

        def floor(n):
            n.op = ast.FloorDiv()
            return n

        yield "integer division", {}, floor

        def squared(n):
            n.right = ast.BinOp(n.right, ast.Mult(), _copied(n.right))
            return n

        power = isinstance(node.right, ast.BinOp) and isinstance(node.right.op, ast.Pow)
        if not (power and not isinstance(node.right.right, ast.Constant)):
            # (a divisor b^e squared is b^(2e): the exponent's edit tells it in those words)
            yield "divided twice", {"names": named(right)}, squared
        sqrt = ast.Call(_stand_in("sqrt"), [node.right], [])
        yield (
            "root",
            {"names": named(right), "root": True},
            lambda n, s=sqrt: ast.BinOp(n.left, ast.Div(), _copied(s)),
        )
    if op is ast.Pow:
        exponent = node.right
        if isinstance(exponent, ast.Constant) and exponent.value == 2:
            yield (
                "function",
                {"used": "abs", "right": "square"},
                lambda n: ast.Call(_stand_in("abs"), [n.left], []),
            )
        if isinstance(exponent, ast.Constant) and exponent.value == 0.5:
            yield "root", {"names": named(left), "root": False}, lambda n: n.left
        if not isinstance(exponent, ast.Constant):
            # An exponent computed from sizes (base^(2i/d)): its numerator or denominator
            # counted twice or half (i for 2i, d/2 for d) doubles or halves it.
            for factor in (2.0, 0.5):

                def scaled(n, factor=factor):
                    n.right = ast.BinOp(_const(factor), ast.Mult(), n.right)
                    return n

                yield "exponent", {"names": named(left), "factor": factor}, scaled
    if op is ast.MatMult:
        for side in ("left", "right"):
            operand = getattr(node, side)
            if isinstance(operand, ast.Name) and operand.id in parameters:

                def transpose(n, side=side):
                    value = getattr(n, side)
                    swapped = ast.Call(
                        ast.Attribute(ast.Name(PREFIX + "np", ast.Load()), "swapaxes", ast.Load()),
                        [value, _const(-1), _const(-2)],
                        [],
                    )
                    setattr(n, side, swapped)
                    return n

                yield "transposed", {"names": [operand.id]}, transpose

        def commute(n):
            n.left, n.right = n.right, n.left
            return n

        yield "arguments swapped", {"op": "@"}, commute


# The axes a size may wrongly be taken from: the first few and the last two.
_SIZE_AXES = (0, 1, 2, 3, -1, -2)


def _size_edits(node: ast.Subscript, parameters: set[str]) -> Iterator[Edit]:
    """A size taken from another input or another axis (np.shape(query)[1], the number of
    queries, where the formula needs np.shape(keys)[1]): `np.shape(x)[i]` and `x.shape[i]`."""
    array, axis = _shape_of(node.value), _int_of(node.slice)
    if array is None or axis is None:
        return
    yield from _size_off_by_one((array, axis))
    for name in sorted(parameters):
        for other in _SIZE_AXES:
            if name == array and other in (axis, axis - 4, axis + 4):
                continue

            def resize(_n, name=name, other=other):
                shape = ast.Call(_stand_in("shape"), [ast.Name(name, ast.Load())], [])
                return ast.Subscript(shape, _const(other), ast.Load())

            facts = {"used": [(name, other)], "right": [(array, axis)]}
            yield "size", facts, resize


def _shape_names(function_def: ast.FunctionDef) -> dict[str, tuple[str, int]]:
    """The local names bound to sizes of the inputs (`batch, steps, depth = query.shape`,
    `depth = np.shape(query)[-1]`): name -> (the input, its axis)."""
    found: dict[str, tuple[str, int]] = {}
    for node in ast.walk(function_def):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Tuple):
            array = _shape_of(value)
            if array is not None:
                for axis, element in enumerate(target.elts):
                    if isinstance(element, ast.Name) and element.id != "_":
                        found[element.id] = (array, axis)
        elif isinstance(target, ast.Name) and isinstance(value, ast.Subscript):
            array, axis = _shape_of(value.value), _int_of(value.slice)
            if array is not None and axis is not None:
                found[target.id] = (array, axis)
    return found


def _shape_of(node) -> str | None:
    """ "x" for `x.shape` and `np.shape(x)`, else None."""
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        node = node.value
    elif isinstance(node, ast.Call) and _call_name(node) == "shape" and len(node.args) == 1:
        node = node.args[0]
    else:
        return None
    return node.id if isinstance(node, ast.Name) else None


def _size_off_by_one(size: tuple[str, int]) -> Iterator[Edit]:
    """A size one short or one long (S − 1 for S: the last index for the length)."""
    for step in (-1, 1):

        def shifted(n, step=step):
            return ast.BinOp(n, ast.Add(), _const(step))

        yield "size off by one", {"size": size, "step": step}, shifted


def _size_name_edits(node, shape_names: dict[str, tuple[str, int]]) -> Iterator[Edit]:
    """A size used for another (`math.sqrt(steps)` for `math.sqrt(depth)`) or for the product of
    two (the model's width H·d for the head's d)."""
    if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
        return
    right = shape_names.get(node.id)
    if right is None:
        return
    yield from _size_off_by_one(right)
    names = sorted(shape_names)
    for other in names:
        if other != node.id:
            yield (
                "size",
                {"used": [shape_names[other]], "right": [right]},
                (lambda _n, other=other: ast.Name(other, ast.Load())),
            )
    for first, second in itertools.combinations_with_replacement(names, 2):

        def product(_n, first=first, second=second):
            return ast.BinOp(ast.Name(first, ast.Load()), ast.Mult(), ast.Name(second, ast.Load()))

        used = [shape_names[first], shape_names[second]]
        yield "size", {"used": used, "right": [right]}, product


def _subscript_edits(node: ast.Subscript, parameters: set[str]) -> Iterator[Edit]:
    """Two index names swapped (k[n, j] for k[n, i]): the other axis of a pair; a new axis
    left out (x for x[:, None]): a broadcast then pairs the array's axes with the wrong ones."""
    index = node.slice
    # Named only where the student knows the name: an input of the function.
    base = _plain_name(node.value)
    name = base if base in parameters else ""
    if _is_none(index):
        yield "axis dropped", {"name": name}, lambda n: n.value
    if not isinstance(index, ast.Tuple):
        return
    for position, element in enumerate(index.elts):
        if not _is_none(element):
            continue

        def drop(n, position=position):
            kept = [e for i, e in enumerate(n.slice.elts) if i != position]
            if all(isinstance(e, ast.Slice) and _whole(e) for e in kept):
                return n.value
            n.slice = ast.Tuple(kept, ast.Load()) if len(kept) > 1 else kept[0]
            return n

        yield "axis dropped", {"name": name}, drop
    names = [(i, e.id) for i, e in enumerate(index.elts) if isinstance(e, ast.Name)]
    for (a, first), (b, second) in itertools.pairwise(names):

        def swap(n, a=a, b=b):
            elts = n.slice.elts
            elts[a], elts[b] = elts[b], elts[a]
            return n

        yield "indices swapped", {"first": first, "second": second}, swap


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _whole(part: ast.Slice) -> bool:
    """`:` alone."""
    return part.lower is None and part.upper is None and part.step is None


def _plain_name(node) -> str:
    return node.id if isinstance(node, ast.Name) else ""


def _order_edits(body: list[ast.stmt]) -> Iterator[tuple[int, Callable[[list], list]]]:
    """Two consecutive steps in the other order: `a = f(x); b = g(a)` becomes `a = g(x);
    b = f(a)` (g applied first), for every plain name x of f's expression."""
    for i in range(len(body) - 1):
        first, second = body[i], body[i + 1]
        if not (
            isinstance(first, ast.Assign)
            and isinstance(second, ast.Assign)
            and len(first.targets) == len(second.targets) == 1
            and isinstance(first.targets[0], ast.Name)
        ):
            continue
        chained = first.targets[0].id
        if chained not in _free_names(second.value):
            continue
        for source in _free_names(first.value):
            if source == chained:
                continue

            def reorder(stmts, i=i, chained=chained, source=source):
                f, g = stmts[i], stmts[i + 1]
                g_first = _renamed(g.value, chained, source)
                f_second = _renamed(f.value, source, chained)
                stmts[i] = ast.Assign([ast.Name(chained, ast.Store())], g_first)
                stmts[i + 1] = ast.Assign([_copied(t) for t in g.targets], f_second)
                return stmts

            yield i, reorder


def _renamed(node: ast.expr, old: str, new: str) -> ast.expr:
    node = _copied(node)
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id == old:
            n.id = new
    return node


@dataclass(frozen=True)
class _Source:
    tree: ast.Module
    function: Callable


# Each reference function's source, read and parsed once per process (a search composing
# mutants asks for the same few functions thousands of times). Callers copy the tree before
# editing it: a parsed tree is never changed.
_PARSED: dict[Callable, _Source] = {}


def _parsed(function: Callable) -> _Source | None:
    if function in _PARSED:
        return _PARSED[function]
    try:
        text = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return None
    tree = ast.parse(text)
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef):
        return None
    _PARSED[function] = _Source(tree, function)
    return _PARSED[function]


def _copied(node: ast.AST) -> ast.AST:
    """A deep copy of a syntax tree, about three times faster than `copy.deepcopy` (which the
    search spent most of its time in): nodes and lists are copied, the leaves (names, numbers,
    strings) are immutable and shared."""
    cls = node.__class__
    new = cls.__new__(cls)
    fields = new.__dict__
    for name, value in node.__dict__.items():
        if isinstance(value, ast.AST):
            fields[name] = _copied(value)
        elif isinstance(value, list):
            fields[name] = [_copied(x) if isinstance(x, ast.AST) else x for x in value]
        else:
            fields[name] = value
    return new


def _compile(tree: ast.Module, function: Callable, recorder, axis_chooser) -> Callable | None:
    tree = ast.fix_missing_locations(tree)
    namespace = dict(function.__globals__)
    namespace.update({PREFIX + name: value for name, value in STAND_INS.items()})
    namespace[PREFIX + "np"] = np
    namespace[PREFIX + "record"] = recorder
    namespace[PREFIX + "axis"] = axis_chooser
    try:
        code = compile(tree, f"<mutant of {function.__name__}>", "exec")
        exec(code, namespace)  # noqa: S102 - our own reference's edited source, never a submission's
    except Exception:  # noqa: BLE001 - an edit that does not compile is no mutant
        return None
    return namespace[tree.body[0].name]


def helpers(function: Callable, depth: int = 2) -> list[tuple[Callable, tuple[str, ...]]]:
    """(helper, path of names from `function` to it) for the grader.reference functions that
    `function` calls by name, `depth` calls down, each once."""
    found, seen = [], {function}

    def visit(f, path, level):
        source = _parsed(f)
        if source is None or level >= depth:
            return
        for node in ast.walk(source.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            callee = f.__globals__.get(node.func.id)
            if (
                isinstance(callee, types.FunctionType)
                and callee.__module__.startswith("grader.reference")
                and callee not in seen
            ):
                seen.add(callee)
                found.append((callee, path + (node.func.id,)))
                visit(callee, path + (node.func.id,), level + 1)

    visit(function, (), 0)
    return found


def _rebound(function: Callable, path: tuple[str, ...], changed: Callable) -> Callable:
    """`function` calling `changed` in place of the helper at the end of `path`."""
    if not path:
        return changed
    head, *rest = path
    inner = function.__globals__[head]
    replacement = _rebound(inner, tuple(rest), changed)
    namespace = dict(function.__globals__)
    namespace[head] = replacement
    return types.FunctionType(
        function.__code__,
        namespace,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )


# Mutants already made, per (reference function, depth): each reference is edited and compiled
# once per process, however many students' outputs are searched. A list and the generator that
# goes on filling it where a search stopped early.
_MADE: dict[tuple, tuple[list[Mutant], Iterator[Mutant]]] = {}


def mutants(function: Callable, depth: int = 2) -> Iterator[Mutant]:
    """Every mutant of `function`: its own body first, then its helpers', nearest first. Made
    once per process (see _MADE): a later call yields the same Mutant objects."""
    key = (function, depth)
    if key not in _MADE:
        _MADE[key] = ([], _made(function, depth))
    made, more = _MADE[key]
    index = 0
    while True:
        if index < len(made):
            yield made[index]
            index += 1
            continue
        following = next(more, None)
        if following is None:
            return
        made.append(following)


def _made(function: Callable, depth: int) -> Iterator[Mutant]:
    targets = [(function, ())] + helpers(function, depth)
    for changed_function, path in targets:
        yield from _mutants_of(function, changed_function, path)


def composed(first: Mutant, second: Mutant) -> Mutant | None:
    """The reference with both changes, or None where they cannot be made together (a
    reordering, the same node, one node inside the other, an edit that no longer compiles)."""
    if first.recipe is None or second.recipe is None:
        return None
    (top, f1, path1, index1, edit1), (_top, f2, path2, index2, edit2) = first.recipe, second.recipe
    if f1 is f2 and path1 == path2:
        if index1 == index2:
            return None
        compiled = _edited(f1, (index1, edit1), (index2, edit2))
        if compiled is None:
            return None
        function = _rebound(top, path1, compiled)
    else:
        # The outer edit first: rebinding a deeper helper then reaches into the edited caller.
        (fa, pa, ia, ea), (fb, pb, ib, eb) = sorted(
            [(f1, path1, index1, edit1), (f2, path2, index2, edit2)], key=lambda r: len(r[1])
        )
        function = top
        for changed, path, index, edit in ((fa, pa, ia, ea), (fb, pb, ib, eb)):
            single = _edited(changed, (index, edit))
            if single is None:
                return None
            function = _rebound(function, path, single)
    mutant = Mutant("composed", first.where, max(first.depth, second.depth), function)
    mutant.parts = (first, second)
    return mutant


# Edits compiled for compositions, per (function, its (node index, edit) pairs): a composition
# search pairs the same few mutants with one another again for each student and case. A function
# compiled records nothing and is never changed, so one serves every composition that asks for
# it. A long-lived process (a batch, `grader watch`) starts the cache afresh past _EDITED_MOST.
_EDITED: dict[tuple, Callable | None] = {}
_EDITED_MOST = 20_000


def _edited(function: Callable, *edits: tuple[int, Callable]) -> Callable | None:
    """`function` compiled with each `(node index, edit)` made, recording nothing (cached); None
    where they cannot be made together (one node inside another, an edit that no longer
    compiles)."""
    key = (function, edits)
    if key not in _EDITED:
        if len(_EDITED) >= _EDITED_MOST:
            _EDITED.clear()
        _EDITED[key] = _compiled_with(function, edits)
    return _EDITED[key]


def _compiled_with(function: Callable, edits: tuple[tuple[int, Callable], ...]):
    source = _parsed(function)
    if source is None:
        return None
    tree = _copied(source.tree)
    nodes = list(ast.walk(tree.body[0]))
    targets = [nodes[index] for index, _edit in edits]
    for one, other in itertools.combinations(targets, 2):
        if other in ast.walk(one) or one in ast.walk(other):
            return None
    for node, (_index, edit) in zip(targets, edits, strict=True):
        replacement = edit(node)
        if replacement is not node and not _replace(tree, node, replacement):
            return None
    return _compile(tree, function, _unrecorded, _axis_used)


def _parameters(function: Callable) -> set[str]:
    """The names of `function`'s parameters but its flags (a default of True or False): a flag
    chooses how a reference computes (`epsilon_inside`), it is no quantity of the formula that
    a student could take for another, and its name means nothing to them."""
    try:
        found = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in found if not isinstance(p.default, bool)}


def _mutants_of(top: Callable, function: Callable, path: tuple[str, ...]) -> Iterator[Mutant]:
    source = _parsed(function)
    if source is None:
        return
    parameters = _parameters(function) | _parameters(top)
    nodes = list(ast.walk(source.tree.body[0]))
    shape_names = _shape_names(source.tree.body[0])
    for index, node in enumerate(nodes):
        if index == 0:
            continue
        edits = itertools.chain(
            _edits(node, parameters, function.__globals__), _size_name_edits(node, shape_names)
        )
        for kind, facts, edit in edits:
            tree = _copied(source.tree)
            copied = list(ast.walk(tree.body[0]))[index]
            replacement = edit(copied)
            if replacement is not copied and not _replace(tree, copied, replacement):
                continue
            mutant = _make(kind, dict(facts), top, function, path, tree)
            if mutant is not None:
                mutant.recipe = (top, function, path, index, edit)
                yield mutant
    used = {
        node.id
        for node in nodes
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in parameters
    }
    for name in sorted(used & _parameters(function)):
        # Every example computed with the first one's `name` (a (B, T) mask broadcast against
        # (B, 1, T) scores and read at [:, 0], a length taken as lengths[0]).
        tree = _copied(source.tree)
        first = ast.Call(_stand_in("first_rows"), [ast.Name(name, ast.Load())], [])
        assign = ast.Assign([ast.Name(name, ast.Store())], first, lineno=0)
        tree.body[0].body.insert(0, assign)
        ast.fix_missing_locations(tree)
        mutant = _make("first example's input", {"name": name}, top, function, path, tree)
        if mutant is not None:
            yield mutant
    for block in _blocks(source.tree.body[0]):
        for i, reorder in _order_edits(block):
            tree = _copied(source.tree)
            copied_block = _blocks(tree.body[0])[_blocks(source.tree.body[0]).index(block)]
            reorder(copied_block)
            mutant = _make("order", {"step": i}, top, function, path, tree)
            if mutant is not None:
                yield mutant


def _blocks(function_def: ast.FunctionDef) -> list[list[ast.stmt]]:
    return [
        n.body for n in ast.walk(function_def) if hasattr(n, "body") and isinstance(n.body, list)
    ]


def _make(kind, facts, top, function, path, tree) -> Mutant | None:
    seen: dict = {}

    def record(site, value):
        seen.setdefault(site, np.shape(value))
        return value

    def choose_axis(site, original, axis):
        seen.setdefault(site + ":right", original)
        return _axis_used(site, original, axis)

    compiled = _compile(tree, function, record, choose_axis)
    if compiled is None:
        return None
    return Mutant(
        kind,
        function.__name__,
        len(path),
        _rebound(top, path, compiled),
        facts,
        seen,
    )


def _axis_used(_site, original, axis):
    """The axis a mutant's reduction runs over: `axis`, or for "batch" the right one and the
    batch's together."""
    if axis == "batch":
        right = -1 if original is None else original
        return right if isinstance(right, tuple) else (0, right)
    return axis


def _unrecorded(_site, value):
    return value


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> bool:
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, name, new)
                return True
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is old:
                        value[i] = new
                        return True
    return False
