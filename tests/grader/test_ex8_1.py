"""Exercise 8-1 graded end to end: the reference (equal to Keras's own counts) and what its
grading checks, a correct alternative and planted mistakes (tests/grader/test_records.py grades
the reference and the stub)."""

import keras
import pytest

from grader.grading import grade
from grader.records import ex8_1 as record
from grader.reference import recurrent as recurrent_ref
from solutions import ex8_1 as reference
from tests.grader.test_records import HIDDEN_SEEDS
from tests.support.grading import (
    assert_full_marks,
    reference_result,
    submit,
)
from tests.support.planting import from_table

pytestmark = pytest.mark.ex8_1

EXERCISE = "8-1"


def test_reference_is_checked_for_a_ratio_between_2_and_4():
    result = reference_result(EXERCISE, HIDDEN_SEEDS[EXERCISE])
    names = [check.name for part in result.parts for check in part.checks]
    assert any(name.startswith("between 2 and 4") for name in names)


@pytest.mark.parametrize("input_dim,units", record.SIZES)
def test_reference_and_numpy_count_equal_keras_count_params(input_dim, units):
    layers = [
        ("lstm", {}, keras.layers.LSTM(units)),
        ("gru", {}, keras.layers.GRU(units)),
        ("gru", {"reset_after": False}, keras.layers.GRU(units, reset_after=False)),
        ("simple_rnn", {}, keras.layers.SimpleRNN(units)),
    ]
    for kind, options, layer in layers:
        layer.build((None, None, input_dim))
        expected = layer.count_params()
        counted = getattr(reference, f"{kind}_param_count")(input_dim, units, **options)
        assert counted == expected, (kind, options)
        # The NumPy count of grader.reference, which the known mistakes are variations of.
        counted = recurrent_ref.param_count(kind, input_dim, units, **options)
        assert counted == expected, (kind, options)
        if not options:
            a, b, c = reference.param_count_coefficients(kind, input_dim)
            assert a * units**2 + b * units + c == expected, kind
            a, b, c = recurrent_ref.param_count_coefficients(kind, input_dim)
            assert a * units**2 + b * units + c == expected, kind


def test_growth_functions_show_the_quadratic_regime():
    # Doubling a layer much wider than its input nearly quadruples it; a narrow one, doubles.
    assert reference.doubling_ratio("lstm", 16, 4096) == pytest.approx(4.0, abs=0.01)
    assert reference.doubling_ratio("lstm", 4096, 1) == pytest.approx(2.0, abs=0.01)
    for kind in recurrent_ref.KINDS:
        a, _, c = reference.param_count_coefficients(kind, 10)
        assert (a, c) == (recurrent_ref.BLOCKS[kind], 0)
    with pytest.raises(ValueError, match="kind"):
        reference.param_count_coefficients("transformer", 3)


ALTERNATIVE_SHAPES_AND_DIFFERENCES = """
import math

def _weights(input_dim, units, blocks, biases):
    # The shapes of Keras's kernel, recurrent_kernel and bias.
    shapes = [(input_dim, blocks * units), (units, blocks * units), (biases, blocks * units)]
    return sum(math.prod(shape) for shape in shapes)

def simple_rnn_param_count(input_dim, units):
    return _weights(input_dim, units, 1, 1)

def lstm_param_count(input_dim, units):
    return _weights(input_dim, units, 4, 1)

def gru_param_count(input_dim, units, reset_after=True):
    return _weights(input_dim, units, 3, 2 if reset_after else 1)

COUNTS = {"lstm": lstm_param_count, "gru": gru_param_count, "simple_rnn": simple_rnn_param_count}

def param_count_coefficients(kind, input_dim):
    if kind not in COUNTS:
        raise ValueError(f"unknown kind {kind!r}")
    # A quadratic is fixed by three values; its second difference is 2a.
    y0, y1, y2 = (COUNTS[kind](input_dim, u) for u in (0, 1, 2))
    a = (y2 - 2 * y1 + y0) / 2
    return [a, y1 - y0 - a, y0]

def doubling_ratio(kind, input_dim, units):
    a, b, c = param_count_coefficients(kind, input_dim)
    u = np.float64(units)
    return (a * (2 * u) ** 2 + b * 2 * u + c) / (a * u**2 + b * u + c)
"""


def test_correct_alternative_scores_full_marks(tmp_path):
    assert_full_marks(
        grade(EXERCISE, submit(tmp_path, EXERCISE, ALTERNATIVE_SHAPES_AND_DIFFERENCES))
    )


def _function(name, signature):
    """A maker of one-line submissions: `def name(signature): return <expression>`."""
    return lambda expression: f"def {name}({signature}):\n    return {expression}\n"


LSTM = _function("lstm_param_count", "input_dim, units")
GRU = _function("gru_param_count", "input_dim, units, reset_after=True")
SIMPLE = _function("simple_rnn_param_count", "input_dim, units")
COEFFICIENTS = _function("param_count_coefficients", "kind, input_dim")
BLOCKS = "{'lstm': 4, 'gru': 3, 'simple_rnn': 1}[kind]"
DOUBLING_TEMPLATE = (
    "def _count(kind, i, u):\n"
    f"    return {BLOCKS} * (i * u + u * u + (2 if kind == 'gru' else 1) * u)\n"
    "def doubling_ratio(kind, input_dim, units):\n"
    "    return EXPRESSION\n"
)


def doubling(expression):
    return DOUBLING_TEMPLATE.replace("EXPRESSION", expression)


PLANTED = [
    # (part, source, the named mistake, a phrase of the feedback)
    (
        "lstm_param_count",
        LSTM("input_dim * units + units * units + units"),
        "one block only",
        "four blocks",
    ),
    (
        "lstm_param_count",
        LSTM("4 * (input_dim * units + units * units)"),
        "bias forgotten",
        "bias vectors are not counted",
    ),
    (
        "lstm_param_count",
        LSTM("4 * (input_dim * units + units * units + 2 * units)"),
        "two biases per block",
        "PyTorch",
    ),
    (
        "lstm_param_count",
        LSTM("4 * (input_dim * units + units * units) + units"),
        "one bias for all blocks",
        "one per block",
    ),
    (
        "param_count_coefficients",
        COEFFICIENTS(f"[{BLOCKS}, {BLOCKS} * input_dim, {BLOCKS} * (2 if kind == 'gru' else 1)]"),
        "biases in the constant term",
        "belong to b",
    ),
    (
        "lstm_param_count",
        LSTM("4 * (units * input_dim + input_dim**2 + input_dim)"),
        "input_dim and units swapped",
        "swapped",
    ),
    (
        "lstm_param_count",
        LSTM("3 * (input_dim * units + units * units + units)"),
        "three blocks",
        "like a GRU",
    ),
    (
        "gru_param_count",
        GRU("3 * (input_dim * units + units * units + units)"),
        "reset_after ignored",
        "two bias vectors",
    ),
    (
        "gru_param_count",
        GRU("4 * (input_dim * units + units * units + (2 if reset_after else 1) * units)"),
        "four blocks",
        "like an LSTM",
    ),
    (
        "simple_rnn_param_count",
        SIMPLE("input_dim * units + units"),
        "recurrent weights forgotten",
        "recurrent weights U",
    ),
    (
        "param_count_coefficients",
        COEFFICIENTS(f"[0, {BLOCKS} * (input_dim + (2 if kind == 'gru' else 1)), {BLOCKS}]"),
        "lowest power first",
        "highest power first",
    ),
    (
        "param_count_coefficients",
        COEFFICIENTS(f"[{BLOCKS}, {BLOCKS} * input_dim, 0]"),
        "bias left out of b",
        "misses the biases",
    ),
    (
        "param_count_coefficients",
        COEFFICIENTS(f"[{BLOCKS}, {BLOCKS} * (input_dim + 1), 0]"),
        "GRU with one bias per block",
        "reset_after=True",
    ),
    ("doubling_ratio", doubling("4.0"), "always 4", "ratio of the u² term alone"),
    (
        "lstm_param_count",
        LSTM("4 * (input_dim * units + units)"),
        "recurrent weights forgotten",
        "recurrent weights U",
    ),
    (
        "gru_param_count",
        GRU("3 * (input_dim * units + units * units + 2 * units)"),
        "two biases without reset_after",
        "reset_after=False",
    ),
    (
        "gru_param_count",
        GRU("3 * (input_dim * units + units * units)"),
        "bias forgotten",
        "bias vectors are not counted",
    ),
    (
        "simple_rnn_param_count",
        SIMPLE("input_dim * units + units * units"),
        "bias forgotten",
        "bias vectors are not counted",
    ),
    (
        "simple_rnn_param_count",
        SIMPLE("4 * (input_dim * units + units * units + units)"),
        "counted like an LSTM",
        "one block",
    ),
    (
        "param_count_coefficients",
        COEFFICIENTS(f"[{BLOCKS}, {BLOCKS} * (2 if kind == 'gru' else 1), 0]"),
        "input weights left out of b",
        "misses the input weights",
    ),
    ("doubling_ratio", doubling("2.0"), "always 2", "linear in units"),
    (
        "doubling_ratio",
        doubling("_count(kind, input_dim, 2 * units) - _count(kind, input_dim, units)"),
        "difference instead of ratio",
        "the difference",
    ),
]


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    upside_down = doubling("_count(kind, input_dim, units) / _count(kind, input_dim, 2 * units)")
    return from_table(
        [*PLANTED, ("doubling_ratio", upside_down, "ratio upside down", "not a number in [2, 4]")]
    )
