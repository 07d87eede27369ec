"""Exercise 8-1: parameter counts of LSTM, GRU and simple RNN layers, and how they grow."""

from __future__ import annotations

import numpy as np

from grader.engine.spec import FUNCTION, Case, Exercise, Mistake, Part, Property

# (input_dim, units): 1 and 1, units much smaller and much larger than input_dim, equal sizes,
# and Keras-sized layers, so that a swapped argument or a missing term cannot pass.
SIZES = [(1, 1), (3, 5), (5, 3), (10, 10), (32, 128), (128, 32), (300, 512), (1, 256), (512, 1)]
KINDS = ("lstm", "gru", "simple_rnn")
BLOCKS = {"lstm": 4, "gru": 3, "simple_rnn": 1}


def _random_sizes(rng, count=6):
    """Fresh sizes for hidden checks, from 1 to about a thousand on a log scale."""
    return [
        tuple(int(n) for n in np.exp(rng.uniform(0.0, 7.0, size=2)).round()) for _ in range(count)
    ]


def _sizes(rng, hidden):
    return _random_sizes(rng) if hidden else SIZES


def _size_case(target, input_dim, units, **extra):
    label = f"input_dim={input_dim} units={units}"
    label += "".join(f" {key}={value}" for key, value in extra.items())
    return Case(target, FUNCTION, label, params={"input_dim": input_dim, "units": units, **extra})


def lstm_cases(rng, hidden=False):
    return [_size_case("lstm_param_count", i, u) for i, u in _sizes(rng, hidden)]


def gru_cases(rng, hidden=False):
    cases = []
    for index, (i, u) in enumerate(_sizes(rng, hidden)):
        if index % 3 == 0:  # the default argument, reset_after=True
            cases.append(_size_case("gru_param_count", i, u))
        cases.append(_size_case("gru_param_count", i, u, reset_after=bool(index % 2)))
    return cases


def simple_rnn_cases(rng, hidden=False):
    return [_size_case("simple_rnn_param_count", i, u) for i, u in _sizes(rng, hidden)]


def coefficient_cases(rng, hidden=False):
    dims = [int(n) for n in rng.integers(1, 1000, size=2)] if hidden else [1, 7, 300]
    return [
        Case(
            "param_count_coefficients",
            FUNCTION,
            f"kind={kind} input_dim={dim}",
            params={"kind": kind, "input_dim": dim},
        )
        for kind in KINDS
        for dim in dims
    ]


def doubling_cases(rng, hidden=False):
    sizes = _random_sizes(rng, 4) if hidden else [(1, 1), (16, 2), (16, 1024), (100, 100)]
    return [
        Case(
            "doubling_ratio",
            FUNCTION,
            f"kind={kind} input_dim={i} units={u}",
            params={"kind": kind, "input_dim": i, "units": u},
        )
        for kind in KINDS
        for i, u in sizes
    ]


# --- the counts and the known mistakes, recomputed from a case ----------------------------------


def count(kind, input_dim, units, reset_after=True):
    """Keras's count: blocks × (input weights + recurrent weights + biases)."""
    biases = 2 if kind == "gru" and reset_after else 1
    return BLOCKS[kind] * (input_dim * units + units * units + biases * units)


def _p(case):
    return case.params["input_dim"], case.params["units"]


def _per_block(blocks, biases=1, input_weights=True, recurrent=True):
    def compute(case):
        i, u = _p(case)
        return np.asarray(blocks * (input_weights * i * u + recurrent * u * u + biases * u))

    return compute


def _swapped(blocks):
    def compute(case):
        i, u = _p(case)
        return np.asarray(blocks * (u * i + i * i + i))

    return compute


def _gru_bias_mistake(biases_when, name, explanation):
    def compute(case):
        if case.params.get("reset_after", True) != biases_when:
            return None
        return _per_block(3, 1 if biases_when else 2)(case)

    return Mistake(name, explanation, compute)


def _coefficients(case, biases=None):
    kind, dim = case.params["kind"], case.params["input_dim"]
    if biases is None:
        biases = 1 + (kind == "gru")
    return np.array([BLOCKS[kind], BLOCKS[kind] * (dim + biases), 0.0])


def _ratio(case, transform):
    kind, i, u = case.params["kind"], case.params["input_dim"], case.params["units"]
    return np.asarray(transform(count(kind, i, 2 * u), count(kind, i, u)), dtype=float)


def _ratio_in_range(case, output):
    value = np.asarray(output, dtype=float)
    if value.shape != () or not 2.0 - 1e-9 <= float(value) <= 4.0 + 1e-9:
        return (
            f"the ratio is {value.tolist()}, not a number in [2, 4]: doubling units doubles "
            "a count that is linear in units and quadruples one that is quadratic"
        )
    return None


BIAS_FORGOTTEN = "The bias vectors are not counted: each block has a bias of `units` entries."
RECURRENT_FORGOTTEN = (
    "The recurrent weights U (units × units, one per block) are not counted: each block sees "
    "h_{t-1} as well as x_t."
)

RECORD = Exercise(
    id="8-1",
    title="Parameters of recurrent layers: LSTM capacity",
    file="ex8_1.py",
    section="NNDL 8 (network capacity, exercise 8-1); LSTM NNDL 6.6",
    timeout=15.0,
    summary=(
        "Count the parameters of Keras's LSTM, GRU and SimpleRNN layers exactly, then show how "
        "the count grows with the number of units: as a polynomial a·u² + b·u + c, and by the "
        "factor that doubling the units multiplies it by (between 2 and 4)."
    ),
    parts=(
        Part(
            name="lstm_param_count",
            points=3,
            targets=("lstm_param_count",),
            make_cases=lstm_cases,
            description="lstm_param_count(input_dim, units) equals LSTM(units).count_params().",
            mistakes=(
                Mistake(
                    "one block only",
                    "This is the count of a simple RNN: an LSTM has four blocks with their own "
                    "weights (input, forget and output gates and the candidate cell).",
                    _per_block(1),
                ),
                Mistake(
                    "three blocks",
                    "You counted three blocks, like a GRU: an LSTM has four (input, forget and "
                    "output gates and the candidate cell c̃).",
                    _per_block(3),
                ),
                Mistake("bias forgotten", BIAS_FORGOTTEN, _per_block(4, biases=0)),
                Mistake(
                    "two biases per block",
                    "You counted two bias vectors per block, as PyTorch's LSTM has (b_ih and "
                    "b_hh); Keras's LSTM has one per block.",
                    _per_block(4, biases=2),
                ),
                Mistake("recurrent weights forgotten", RECURRENT_FORGOTTEN, _per_block(4, 1, 1, 0)),
                Mistake(
                    "input_dim and units swapped",
                    "input_dim and units are swapped: the recurrent matrices are units × units, "
                    "the input matrices input_dim × units.",
                    _swapped(4),
                ),
            ),
        ),
        Part(
            name="gru_param_count",
            points=2,
            targets=("gru_param_count",),
            make_cases=gru_cases,
            description="gru_param_count(input_dim, units, reset_after) equals "
            "GRU(units, reset_after=reset_after).count_params().",
            mistakes=(
                _gru_bias_mistake(
                    True,
                    "reset_after ignored",
                    "With reset_after=True (the default) each block has two bias vectors, one "
                    "for the input product and one for the recurrent product; you counted one.",
                ),
                _gru_bias_mistake(
                    False,
                    "two biases without reset_after",
                    "With reset_after=False each block has one bias vector; you counted two.",
                ),
                Mistake(
                    "four blocks",
                    "You counted four blocks, like an LSTM: a GRU has three (update gate, reset "
                    "gate and candidate state).",
                    lambda case: _per_block(4, 2 if case.params.get("reset_after", True) else 1)(
                        case
                    ),
                ),
                Mistake(
                    "bias forgotten",
                    BIAS_FORGOTTEN,
                    _per_block(3, biases=0),
                ),
            ),
        ),
        Part(
            name="simple_rnn_param_count",
            points=1,
            targets=("simple_rnn_param_count",),
            make_cases=simple_rnn_cases,
            description="simple_rnn_param_count(input_dim, units) equals "
            "SimpleRNN(units).count_params().",
            mistakes=(
                Mistake("bias forgotten", BIAS_FORGOTTEN, _per_block(1, biases=0)),
                Mistake("recurrent weights forgotten", RECURRENT_FORGOTTEN, _per_block(1, 1, 1, 0)),
                Mistake(
                    "counted like an LSTM",
                    "You multiplied by 4 as for an LSTM: a simple RNN has one block.",
                    _per_block(4),
                ),
            ),
        ),
        Part(
            name="param_count_coefficients",
            points=2,
            targets=("param_count_coefficients",),
            make_cases=coefficient_cases,
            description="param_count_coefficients(kind, input_dim): (a, b, c) with "
            "count = a·units² + b·units + c.",
            mistakes=(
                Mistake(
                    "lowest power first",
                    "The coefficients are in the reverse order: return (a, b, c) for "
                    "a·units² + b·units + c, highest power first.",
                    lambda case: _coefficients(case)[::-1],
                ),
                Mistake(
                    "bias left out of b",
                    "The linear coefficient b misses the biases: the bias vectors have `units` "
                    "entries each, so they add to the units term.",
                    lambda case: _coefficients(case, biases=0),
                ),
                Mistake(
                    "GRU with one bias per block",
                    "For a GRU with Keras's default reset_after=True each block has two bias "
                    "vectors, so b = 3·(input_dim + 2).",
                    lambda case: (
                        _coefficients(case, biases=1) if case.params["kind"] == "gru" else None
                    ),
                ),
                Mistake(
                    "input weights left out of b",
                    "The linear coefficient b misses the input weights W: they have "
                    "input_dim × units entries per block, linear in units.",
                    lambda case: (
                        _coefficients(case)
                        - np.array(
                            [0.0, BLOCKS[case.params["kind"]] * case.params["input_dim"], 0.0]
                        )
                    ),
                ),
            ),
        ),
        Part(
            name="doubling_ratio",
            points=2,
            targets=("doubling_ratio",),
            make_cases=doubling_cases,
            description="doubling_ratio(kind, input_dim, units) = count(2·units) / count(units).",
            properties=(Property("between 2 and 4", _ratio_in_range),),
            mistakes=(
                Mistake(
                    "always 4",
                    "4 = (2u)²/u² is the ratio of the u² term alone; the linear term b·u makes "
                    "the ratio smaller, close to 2 when units is small next to input_dim.",
                    lambda case: np.asarray(4.0),
                ),
                Mistake(
                    "always 2",
                    "2 is the ratio of a count linear in units; the recurrent weights add a "
                    "units² term, which pushes the ratio towards 4 for large units.",
                    lambda case: np.asarray(2.0),
                ),
                Mistake(
                    "ratio upside down",
                    "This is count(units) / count(2·units): the ratio is upside down.",
                    lambda case: _ratio(case, lambda big, small: small / big),
                ),
                Mistake(
                    "difference instead of ratio",
                    "This is count(2·units) − count(units), the difference; the exercise asks "
                    "for the ratio.",
                    lambda case: _ratio(case, lambda big, small: big - small),
                ),
            ),
        ),
    ),
)
