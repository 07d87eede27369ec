"""Exercise 8-1: parameter counts of LSTM, GRU and simple RNN layers, and how they grow."""

from __future__ import annotations

from functools import partial

import numpy as np

from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.i18n import N_
from grader.reference import recurrent as ref
from grader.vocabulary.spec import Exercise, Mistake, Part, Property

# (input_dim, units): 1 and 1, units much smaller and much larger than input_dim, equal sizes,
# and Keras-sized layers, so that a swapped argument or a missing term cannot pass.
SIZES = [(1, 1), (3, 5), (5, 3), (10, 10), (32, 128), (128, 32), (300, 512), (1, 256), (512, 1)]
DOUBLING_SIZES = [(1, 1), (16, 2), (16, 1024), (100, 100)]
COEFFICIENT_DIMS = [1, 7, 300]


def _sizes(rng, hidden, public=SIZES, count=6):
    """The public sizes, or (hidden checks) fresh ones from 1 to about a thousand, log-uniform."""
    if not hidden:
        return public
    return [tuple(int(n) for n in np.exp(rng.uniform(0, 7, size=2)).round()) for _ in range(count)]


def count_cases(target, gru=False):
    """Cases of a count function; a GRU's also with reset_after (and every third by default)."""

    def make_cases(rng, hidden=False):
        cases = []
        for index, (i, u) in enumerate(_sizes(rng, hidden)):
            if gru and index % 3 == 0:
                cases.append(draw.function_case(target, input_dim=i, units=u))
            options = {"reset_after": bool(index % 2)} if gru else {}
            cases.append(draw.function_case(target, input_dim=i, units=u, **options))
        return cases

    return make_cases


# The docstrings promise a ValueError for a kind they do not know: "LSTM" in capitals, a
# transformer, and no kind at all.
UNKNOWN_KINDS = ("transformer", "LSTM", "")
UNKNOWN_KIND = N_("the docstring asks for a ValueError when `kind` is not lstm, gru or simple_rnn")


def unknown_kind_cases(target, hidden, **sizes):
    """Cases that must raise ValueError: public checks only (every seed asks the same)."""
    if hidden:
        return []
    return [
        draw.raising_function_case(target, UNKNOWN_KIND, kind=k, **sizes) for k in UNKNOWN_KINDS
    ]


def coefficient_cases(rng, hidden=False):
    dims = [int(n) for n in rng.integers(1, 1000, size=2)] if hidden else COEFFICIENT_DIMS
    cases = [
        draw.function_case("param_count_coefficients", kind=k, input_dim=d)
        for k in ref.KINDS
        for d in dims
    ]
    return cases + unknown_kind_cases("param_count_coefficients", hidden, input_dim=4)


def doubling_cases(rng, hidden=False):
    sizes = _sizes(rng, hidden, DOUBLING_SIZES, count=4)
    cases = [
        draw.function_case("doubling_ratio", kind=k, input_dim=i, units=u)
        for k in ref.KINDS
        for i, u in sizes
    ]
    return cases + unknown_kind_cases("doubling_ratio", hidden, input_dim=4, units=8)


# The count of each kind: a mistake changes one of its terms (see grader.reference.recurrent).
LSTM, GRU, SIMPLE_RNN = (partial(ref.param_count, k) for k in ("lstm", "gru", "simple_rnn"))
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
            "lstm_param_count",
            3,
            count_cases("lstm_param_count"),
            description="lstm_param_count(input_dim, units) equals LSTM(units).count_params().",
            mistakes=(
                Mistake.of(
                    "one block only",
                    "This is the count of a simple RNN: an LSTM has four blocks with their own "
                    "weights (input, forget and output gates and the candidate cell).",
                    SIMPLE_RNN,
                ),
                Mistake.of(
                    "three blocks",
                    "You counted three blocks, like a GRU: an LSTM has four (input, forget and "
                    "output gates and the candidate cell c̃).",
                    LSTM,
                    blocks=3,
                ),
                Mistake.of("bias forgotten", BIAS_FORGOTTEN, LSTM, biases=0),
                Mistake.of(
                    "two biases per block",
                    "You counted two bias vectors per block, as PyTorch's LSTM has (b_ih and "
                    "b_hh); Keras's LSTM has one per block.",
                    LSTM,
                    biases=2,
                ),
                Mistake.of(
                    "one bias for all blocks",
                    "You counted one bias vector for the whole LSTM: Keras keeps one per block, "
                    "4·units bias entries in all (each gate and the candidate has its own).",
                    LSTM,
                    bias_shared=True,
                ),
                Mistake.of(
                    "recurrent weights forgotten", RECURRENT_FORGOTTEN, LSTM, recurrent=False
                ),
                Mistake.of(
                    "input_dim and units swapped",
                    "input_dim and units are swapped: the recurrent matrices are units × units, "
                    "the input matrices input_dim × units.",
                    LSTM,
                    input_dim=on.param("units"),
                    units=on.param("input_dim"),
                ),
            ),
        ),
        Part(
            "gru_param_count",
            2,
            count_cases("gru_param_count", gru=True),
            description="gru_param_count(input_dim, units, reset_after) equals "
            "GRU(units, reset_after=reset_after).count_params().",
            mistakes=(
                Mistake.of(
                    "reset_after ignored",
                    "With reset_after=True (the default) each block has two bias vectors, one "
                    "for the input product and one for the recurrent product; you counted one.",
                    GRU,
                    reset_after=False,
                    when=on.param_is("reset_after", True, default=True),
                ),
                Mistake.of(
                    "two biases without reset_after",
                    "With reset_after=False each block has one bias vector; you counted two.",
                    GRU,
                    reset_after=True,
                    when=on.param_is("reset_after", False, default=True),
                ),
                Mistake.of(
                    "four blocks",
                    "You counted four blocks, like an LSTM: a GRU has three (update gate, reset "
                    "gate and candidate state).",
                    GRU,
                    blocks=4,
                ),
                Mistake.of("bias forgotten", BIAS_FORGOTTEN, GRU, biases=0),
            ),
        ),
        Part(
            "simple_rnn_param_count",
            1,
            count_cases("simple_rnn_param_count"),
            description="simple_rnn_param_count(input_dim, units) equals "
            "SimpleRNN(units).count_params().",
            mistakes=(
                Mistake.of("bias forgotten", BIAS_FORGOTTEN, SIMPLE_RNN, biases=0),
                Mistake.of(
                    "recurrent weights forgotten", RECURRENT_FORGOTTEN, SIMPLE_RNN, recurrent=False
                ),
                Mistake.of(
                    "counted like an LSTM",
                    "You multiplied by 4 as for an LSTM: a simple RNN has one block.",
                    LSTM,
                ),
            ),
        ),
        Part(
            "param_count_coefficients",
            2,
            coefficient_cases,
            description="param_count_coefficients(kind, input_dim): (a, b, c) with "
            "count = a·units² + b·units + c.",
            mistakes=(
                Mistake.of(
                    "lowest power first",
                    "The coefficients are in the reverse order: return (a, b, c) for "
                    "a·units² + b·units + c, highest power first.",
                    ref.param_count_coefficients,
                    highest_first=False,
                ),
                Mistake.of(
                    "biases in the constant term",
                    "The biases went into the constant c: a bias vector has `units` entries, so "
                    "the biases grow with units and belong to b; c is 0 (no units, no "
                    "parameters).",
                    ref.param_count_coefficients,
                    biases_constant=True,
                ),
                Mistake.of(
                    "bias left out of b",
                    "The linear coefficient b misses the biases: the bias vectors have `units` "
                    "entries each, so they add to the units term.",
                    ref.param_count_coefficients,
                    biases=0,
                ),
                Mistake.of(
                    "GRU with one bias per block",
                    "For a GRU with Keras's default reset_after=True each block has two bias "
                    "vectors, so b = 3·(input_dim + 2).",
                    ref.param_count_coefficients,
                    biases=1,
                    when=on.param_is("kind", "gru"),
                ),
                Mistake.of(
                    "input weights left out of b",
                    "The linear coefficient b misses the input weights W: they have "
                    "input_dim × units entries per block, linear in units.",
                    ref.param_count_coefficients,
                    input_weights=False,
                ),
            ),
        ),
        Part(
            "doubling_ratio",
            2,
            doubling_cases,
            description="doubling_ratio(kind, input_dim, units) = count(2·units) / count(units).",
            properties=(Property("between 2 and 4", on.check_of(ref.ratio_in_range)),),
            mistakes=(
                Mistake.of(
                    "always 4",
                    "4 = (2u)²/u² is the ratio of the u² term alone; the linear term b·u makes "
                    "the ratio smaller, close to 2 when units is small next to input_dim.",
                    ref.doubling_ratio,
                    input_dim=0,
                    biases=0,
                ),
                Mistake.of(
                    "always 2",
                    "2 is the ratio of a count linear in units; the recurrent weights add a "
                    "units² term, which pushes the ratio towards 4 for large units.",
                    ref.doubling_ratio,
                    recurrent=False,
                ),
                Mistake.of(
                    "ratio upside down",
                    "This is count(units) / count(2·units): the ratio is upside down.",
                    ref.doubling_ratio,
                    upside_down=True,
                ),
                Mistake.of(
                    "difference instead of ratio",
                    "This is count(2·units) − count(units), the difference; the exercise asks "
                    "for the ratio.",
                    ref.doubling_ratio,
                    difference=True,
                ),
            ),
        ),
    ),
)
