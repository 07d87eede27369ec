"""How a record draws its cases, declared as data: rows of sizes (`Dims`, `rows_cases`), arrays
named by shape ("B Tq d", `normal`, `drawn` and its samplers), and whole cases (`layer_case`,
`function_case`, `drawn_cases`).

Every helper draws from the generator in a fixed order, so a seed always gives the same cases.
"""

from __future__ import annotations

import numpy as np

from grader.i18n import N_
from grader.reference.attention import causal_mask, sequence_mask, softmax
from grader.vocabulary.labels import label_text, label_texts
from grader.vocabulary.spec import FUNCTION, LAYER, Case

# The words of this module's case labels, translated where shown (grader.vocabulary.labels).
LABEL_TEXTS = label_texts(N_("{name} of shape {shape}"))


def around_powers(rng, count: int, bases=(2, 13), exponents=(1, 5), largest: int = 10**6):
    """Integer formulas at their boundaries: for `count` drawn (k, p), the sizes k^p - 1, k^p
    and k^p + 1 (those >= 2 and <= `largest`), each as (n, k). A formula computed with a
    floating logarithm or a division is off by one exactly there (math.log(1000, 10) is
    2.9999999999999996)."""
    rows = []
    for _ in range(count):
        k, p = int(rng.integers(*bases)), int(rng.integers(*exponents))
        rows += [(n, k) for n in (k**p - 1, k**p, k**p + 1) if 2 <= n <= largest]
    return rows


def random_shapes(rng, count: int, size: int, low: int = 1, high: int = 7) -> list[tuple]:
    """`count` shapes of `size` dimensions, each in [low, high): one draw per shape, so a
    record that asks for the same shapes draws the same numbers."""
    return [tuple(int(v) for v in rng.integers(low, high, size=size)) for _ in range(count)]


def shapes_for(rng, hidden: bool, public, count: int, size: int, low: int = 1, high: int = 7):
    """The public shapes, or (hidden checks) `count` fresh ones of `size` dimensions."""
    return random_shapes(rng, count, size, low, high) if hidden else list(public)


def dims_label(**dims) -> str:
    """ "B=2 Tq=3 Tk=5": the dimensions of a case, as its label shows them."""
    return " ".join(f"{name}={value}" for name, value in dims.items())


def dims_label_merged(dims, first: str, second: str, merged: str = "d") -> str:
    """`dims_label` of `dims`, with the sizes `first` and `second` shown as one `merged` where
    they are equal: "B=2 d=5" for d_q = d_k = 5, "B=2 d_q=4 d_k=6" otherwise."""
    same = dims[first] == dims[second]
    shown = {(merged if same and name == first else name): size for name, size in dims.items()}
    return dims_label(**{name: size for name, size in shown.items() if not same or name != second})


def pick(rng, **options) -> dict:
    """One uniform draw from each named range or tuple of options, in the order given:
    `pick(rng, units=range(2, 13), batch=(0, 1, 3, 5))` draws as `rng.integers(2, 13)` then
    `rng.choice((0, 1, 3, 5))` would (a hidden sampler declared as data)."""
    return {name: values[int(rng.integers(len(values)))] for name, values in options.items()}


class Dims:
    """A part's dimensions as a table: the public rows of `names` ("B T d"), and how hidden checks
    draw `count` fresh rows: each of `draws`, in order, is `("T", 1, 9)` (one `rng.integers`
    call) or `("B Tq", 1, 5)` (one call for a vector); `derived` makes the other names from
    those drawn (`{"D": lambda row: 1 + row["S"] // 4}`). `float32` is one more row, graded in
    float32 after the others.
    """

    def __init__(self, names: str, public, draws=(), derived=None, float32=None, count: int = 3):
        self.names, self.public, self.draws = names.split(), tuple(public), tuple(draws)
        self.derived, self.float32, self.count = dict(derived or {}), float32, count

    def rows(self, rng, hidden: bool = False) -> list[dict]:
        """The public rows, or (hidden checks) `count` drawn ones, as dicts in `names` order."""
        if not hidden:
            return [dict(zip(self.names, row, strict=True)) for row in self.public]
        rows = []
        for _ in range(self.count):
            row = {}
            for group, low, high in self.draws:
                keys = group.split()
                one = len(keys) == 1
                drawn = [rng.integers(low, high)] if one else rng.integers(low, high, len(keys))
                row.update(zip(keys, (int(value) for value in drawn), strict=True))
            row.update({name: rule(row) for name, rule in self.derived.items()})
            rows.append({name: row[name] for name in self.names})
        return rows

    def cases(self, make, **options):
        """A part's `make_cases`: `make(rng, row, **options)` for each row, then for the
        float32 row, whose case is graded in float32 (its label ends " float32")."""

        def make_cases(rng, hidden=False):
            cases = [make(rng, row, **options) for row in self.rows(rng, hidden)]
            if self.float32 is not None:
                cases.append(make(rng, dict(zip(self.names, self.float32, strict=True)), **options))
                cases[-1].dtype = "float32"
                cases[-1].label += " float32"
            return cases

        return make_cases


def rows_cases(make, public, draw=None, count: int = 3, float32=None):
    """A part's `make_cases` from rows of sizes (where `Dims` cannot draw them): `make(rng,
    row)` for each public row or (hidden checks) each of `count` rows `draw(rng)` gives, all
    drawn first; then for the `float32` row, graded in float32 (its label ends " float32")."""

    def make_cases(rng, hidden=False):
        rows = [draw(rng) for _ in range(count)] if hidden else list(public)
        cases = [make(rng, row) for row in rows]
        if float32 is not None:
            cases.append(make(rng, float32))
            cases[-1].dtype, cases[-1].label = "float32", f"{cases[-1].label} float32"
        return cases

    return make_cases


def in_dtype(make_cases):
    """A part's `make_cases` whose cases get their inputs in their own dtype: the float32 case
    of a function (which is called with the arrays as they are) is given float32 arrays."""

    def made(rng, hidden=False):
        cases = make_cases(rng, hidden)
        for case in cases:
            case.inputs = {name: array.astype(case.dtype) for name, array in case.inputs.items()}
        return cases

    return made


def settings_cases(make, public, fresh=(), size: int = 3):
    """A part's `make_cases` from named settings: `make(rng, **setting)` for each `public`
    setting or (hidden checks) `make(rng, *shape, **setting)` for each `fresh` one, with a
    shape of `size` sizes in [1, 7) drawn just before each case."""

    def make_cases(rng, hidden=False):
        if not hidden:
            return [make(rng, **setting) for setting in public]
        return [make(rng, *random_shapes(rng, 1, size)[0], **setting) for setting in fresh]

    return make_cases


def drawn_cases(
    rng, target, kind, names: str, rows, inputs, upstream=None, params=(), label="{dims}"
) -> list[Case]:
    """A case per row of sizes named by `names` ("B N d"; a row may end with a dtype, "float32",
    graded in it and labelled so): its `inputs` drawn in order (see `drawn`), then a layer's
    `upstream` gradient of the shape it names. `params` names the sizes passed as params;
    `label` is formatted with the sizes, and "{dims}" with all of them (see `dims_label`)."""
    cases = []
    for row in rows:
        dtype = row[-1] if isinstance(row[-1], str) else "float64"
        dims = dict(zip(names.split(), row, strict=False))
        text = label.format(dims=dims_label(**dims), **dims)
        case = Case(target, kind, text if dtype == "float64" else f"{text} {dtype}", dtype=dtype)
        case.inputs = drawn(rng, dims, **inputs)
        case.params = {name: dims[name] for name in params}
        if upstream is not None:
            case.upstream = drawn(rng, dims, upstream=upstream)["upstream"]
        cases.append(case)
    return cases


def function_case(target: str, **params) -> Case:
    """A case of a function called with keyword arguments only, labelled by them."""
    return Case(target, FUNCTION, dims_label(**params), params=params)


def raising_function_case(target: str, promise: str, exception="ValueError", **params) -> Case:
    """A case of a function that must raise `exception` when called with these keyword
    arguments (see grader.engine.contracts); `promise` is the docstring's promise, in its words
    ("raise ValueError for a kind other than lstm, gru or simple_rnn")."""
    label = dims_label(**{name: repr(value) for name, value in params.items()})
    return Case(target, FUNCTION, label, params=params, raises=exception, promise=promise)


def layer_case(
    target,
    rng,
    dims,
    inputs,
    upstream,
    weights=None,
    weights_first=False,
    fan_in=(),
    lengthless=(),
    **fields,
) -> Case:
    """A layer case declared by shapes (see `normal`): its inputs, then its weights (first if
    `weights_first`), then the upstream gradient of shape `upstream`; labelled by `dims` unless
    `fields` gives a label; `fields` may also give params and a dtype (see Case). `lengthless`
    names inputs given as arrays that hold no sequence length (lengths (B,), say): the layer's
    first call (Case.first_call) reuses them as they are."""
    drawn = normal(rng, dims, fan_in, **weights) if weights and weights_first else None
    arrays = normal(rng, dims, **inputs)
    drawn = normal(rng, dims, fan_in, **weights or {}) if drawn is None else drawn
    gradient = normal(rng, dims, upstream=upstream)["upstream"]
    label = fields.pop("label", dims_label(**dims))
    case = Case(target, LAYER, label, arrays, weights=drawn, upstream=gradient, **fields)
    case.first_call = _other_lengths(rng, dims, inputs, lengthless)
    return case


# The sizes that are sequence lengths: a layer must take any of them on any call.
LENGTHS = ("T", "Tq", "Tk", "N")


def _other_lengths(rng, dims, inputs, lengthless=()) -> dict[str, np.ndarray]:
    """Inputs like those `inputs` declares, with every sequence length one longer, for the
    layer's first call (Case.first_call), the `lengthless` arrays as they are; none where
    another input is given as an array (its lengths are not known) or no length is declared."""
    if not any(
        isinstance(shape, str) and set(shape.split()) & set(LENGTHS) for shape in inputs.values()
    ):
        return {}
    if not all(isinstance(shape, str) or name in lengthless for name, shape in inputs.items()):
        return {}
    longer = {name: size + 1 if name in LENGTHS else size for name, size in dims.items()}
    return normal(np.random.default_rng(rng.integers(2**32)), longer, **inputs)


def normal(rng, dims, fan_in=(), **shapes) -> dict[str, np.ndarray]:
    """Standard normal arrays of the shapes `shapes` declares in dimension names ("B Tq d",
    sizes from `dims`), drawn in that order; those in `fan_in` divided by √ of their first
    dimension (as `kernel`). An array given instead of a shape is taken as it is."""
    arrays = {}
    for name, shape in shapes.items():
        if not isinstance(shape, str):
            arrays[name] = shape
            continue
        array = rng.standard_normal(tuple(dims[size] for size in shape.split()))
        arrays[name] = array / np.sqrt(array.shape[0]) if name in fan_in else array
    return arrays


def drawn(rng, dims, **samplers) -> dict[str, np.ndarray]:
    """Arrays drawn in the order given: a shape ("B N d") is standard normal (see `normal`), a
    sampler of this module draws its own, anything else is taken as it is."""
    arrays = {}
    for name, sampler in samplers.items():
        if isinstance(sampler, str):
            arrays[name] = normal(rng, dims, **{name: sampler})[name]
        else:
            arrays[name] = sampler(rng, dims) if callable(sampler) else sampler
    return arrays


def _shape(dims, shape: str) -> tuple:
    return tuple(dims[size] for size in shape.split())


def uniform(low: float, high: float, shape: str, zeros: float = 0.0):
    """A sampler of `drawn`: values uniform in [low, high) of the named shape ("B N"); then,
    if `zeros`, that fraction of them set exactly to 0 (one more uniform draw)."""

    def draw(rng, dims):
        values = rng.uniform(low, high, size=_shape(dims, shape))
        if zeros:
            values[rng.uniform(size=values.shape) < zeros] = 0.0
        return values

    return draw


def scaled_normal(scale: float, shape: str):
    """A sampler of `drawn`: `scale` times standard normal values of the named shape."""
    return lambda rng, dims: scale * rng.standard_normal(_shape(dims, shape))


def distribution(shape: str, spread: float = 1.5):
    """A sampler of `drawn`: rows of positive weights summing to one along the last axis, the
    softmax of `spread` times standard normal values (what an attention step gives)."""
    return lambda rng, dims: softmax(spread * rng.standard_normal(_shape(dims, shape)))


def coin_flips(shape: str):
    """A sampler of `drawn`: 0.0 or 1.0 with equal chances, of the named shape."""
    return lambda rng, dims: rng.integers(0, 2, size=_shape(dims, shape)).astype(float)


def kernel(rng, rows: int, cols: int) -> np.ndarray:
    """A (rows, cols) weight drawn N(0, 1/rows): products with it stay near 1 in size."""
    return rng.standard_normal((rows, cols)) / np.sqrt(rows)


def padded_lengths(rng, batch: int, steps: int) -> np.ndarray:
    """Valid lengths (float) in [1, steps]: the first 1 (all the weight on position 0), the
    second strictly padded (where steps > 2), all `steps` where steps == 1."""
    if steps == 1:
        return np.full(batch, float(steps))
    lengths = rng.integers(1, steps + 1, size=batch)
    lengths[0] = 1
    if batch > 1:
        lengths[1] = int(rng.integers(2, steps)) if steps > 2 else 1
    return lengths.astype(np.float64)


def valid_lengths(rng, shape, maxlen: int, first=()) -> np.ndarray:
    """Valid lengths (int64) of the given shape, uniform in [0, maxlen], the values of `first`
    placed first (a fully masked row, say, where `first` starts with 0)."""
    lengths = rng.integers(0, maxlen + 1, size=shape)
    flat = lengths.reshape(-1)
    flat[: len(first)] = first[: flat.size]
    return lengths.astype(np.int64)


def optional_size(rng, low: int, high: int, chance: float = 0.5):
    """With probability `chance` a size in [low, high), else None (a layer's default): one
    uniform draw, then one integer draw where a size is drawn."""
    return int(rng.integers(low, high)) if rng.random() < chance else None


LARGE_SCORES = label_text(N_("large scores (about 1000: numerical stability)"))


def large_scores(rng, shape) -> np.ndarray:
    """Scores about a thousand (±1000 + 5 N(0, 1), labelled LARGE_SCORES): an exp() not
    shifted by the maximum overflows on them. Rows (along the last axis) alternate between
    +1000 and -1000, so that a maximum taken over the whole array, not per row, leaves a row
    whose every exp() underflows to 0."""
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
    signs = np.where(np.arange(rows) % 2 == 0, 1.0, -1.0).reshape(tuple(shape[:-1]) + (1,))
    return signs * 1000.0 + 5.0 * rng.standard_normal(shape)


MASKED_HIGH = label_text(N_("masked keys score 1000 above the kept ones"))


def masked_high(scores, label: str, high: bool, keep=None, lengths=None):
    """The scores (B, Tq, Tk) with every masked key 1000 above the kept ones, and the label that
    says so: a softmax over all the keys, masked and renormalised after, underflows on the kept
    ones there (0/0, or a row of zeros). The kept keys: `keep`, or those before `lengths` (B,)
    or (B, Tq). Unchanged unless `high`."""
    if not high:
        return scores, label
    if keep is None:
        batch, _queries, keys = np.shape(scores)
        keep = np.arange(keys) < np.reshape(lengths, (batch, -1, 1))
    keep = np.broadcast_to(np.asarray(keep, dtype=bool), np.shape(scores))
    return scores + 1000.0 * ~keep, f"{label}, {MASKED_HIGH}"


def scores_label(dims, *texts, large: bool = False) -> str:
    """ "B=2 Tq=3 Tk=5, <texts>": a case's label, ending with LARGE_SCORES for `large` scores."""
    return ", ".join([dims_label(**dims), *texts] + [LARGE_SCORES] * large)


def scores(rng, shape, large: bool = False) -> np.ndarray:
    """Scores N(0, 1), or `large` ones (see `large_scores`)."""
    return large_scores(rng, shape) if large else rng.standard_normal(shape)


def boolean_mask(rng, kind: str, B: int, Tq: int, Tk: int) -> np.ndarray:
    """A mask that is True where a query may see a key: "causal" (Tq, Tk); "padding" (B, 1, Tk)
    from lengths, the first full; else random (B, Tq, Tk) with a fully masked row and a row with
    nothing masked."""
    if kind == "causal":
        return causal_mask(Tq, Tk)
    if kind == "padding":
        return sequence_mask(valid_lengths(rng, (B,), Tk, (Tk, 1)), Tk)[:, None, :]
    mask = rng.random((B, Tq, Tk)) < 0.6
    mask[0, 0, :], mask[0, 1:2, :] = False, True
    return mask


def dyadic_weights(rng, shape, units: int = 16) -> np.ndarray:
    """Probability vectors along the last axis whose entries are multiples of 1/`units` (zeros
    included), so that their cumulative sums are exact."""
    *rows, size = shape
    counts = rng.multinomial(units, rng.dirichlet(np.full(size, 0.7)), size=tuple(rows))
    return counts.reshape(shape) / float(units)


def cdf_noise(rng, weights) -> np.ndarray:
    """Uniform numbers in [0, 1), one per row of `weights`, where about 4 in 10 are exactly a
    cumulative sum c_j < 1 of the row, 1 in 10 exactly 0 and 1 in 10 just below a c_j (by
    JUST_BELOW): the boundaries of inverse-CDF sampling, hit and just missed, so that a
    boundary drawn after rounding (c or u rounded to a few decimals) is told apart."""
    cdf = np.cumsum(weights, axis=-1)
    noise = rng.random(weights.shape[:-1])
    for index in np.ndindex(noise.shape):
        draw = rng.random()
        inside = [c for c in cdf[index] if c < 1.0]
        above = [c for c in cdf[index] if JUST_BELOW < c < 1.0]
        if draw < 0.4 and inside:
            noise[index] = inside[int(rng.integers(len(inside)))]
        elif draw < 0.5:
            noise[index] = 0.0
        elif draw < 0.6 and above:
            noise[index] = above[int(rng.integers(len(above)))] - JUST_BELOW
    return noise


# How far below a boundary c_j a "just missed" u lies: far above float32's spacing near 1
# (6e-8), so that a correct solution computing in float32 still tells u from c_j, and below
# the 1e-6 that rounding to six decimals erases.
JUST_BELOW = 3e-7
