"""attnkit.checks: every argument check of the layers, in Keras's style
(`... Received: name=value`)."""

import math

import pytest

from attnkit import checks


@pytest.mark.parametrize(
    ("check", "args", "message"),
    [
        (checks.check_positive_int, ("num_heads", 0), "a positive integer. Received: num_heads=0"),
        (checks.check_positive_int, ("units", True), "Received: units=True"),
        (checks.check_optional_positive_int, ("block_size", 0), "Received: block_size=0"),
        (checks.check_positive_number, ("beta", 0.0), "positive finite float. Received: beta=0.0"),
        (checks.check_positive_number, ("beta", math.inf), "Received: beta=inf"),
        (checks.check_positive_number, ("beta", "2"), "Received: beta='2'"),
        (checks.check_rate, ("dropout", 1.0), "in [0, 1). Received: dropout=1.0"),
        (checks.check_seed, (1.5,), "None or an integer. Received: seed=1.5"),
        (checks.check_bool, ("use_bias", 1), "a bool. Received: use_bias=1"),
        (checks.check_choice, ("mode", "max", ("argmax", "sample")), "one of 'argmax', 'sample'"),
        (checks.check_choice, ("mode", None, ("argmax",)), "Received: mode=None"),
        (checks.check_choice, ("mode", ["argmax"], ("argmax",)), "Received: mode=['argmax']"),
        (checks.check_rank_3, ("query", (2, 3)), "Received: query_shape=(2, 3)"),
        (checks.get_initializer, ("kernel_initializer", 3), "Received: kernel_initializer=3"),
    ],
)
def test_checks_refuse_with_the_name_and_the_value(check, args, message):
    with pytest.raises(ValueError) as info:
        check(*args)
    assert message in str(info.value)


def test_checks_return_what_they_accept():
    assert checks.check_positive_int("n", 3) == 3
    assert checks.check_optional_positive_int("n", None) is None
    assert checks.check_positive_number("beta", 2) == 2.0
    assert checks.check_positive_number("w", math.inf, finite=False) == math.inf
    assert checks.check_rate("dropout", 0) == 0.0
    assert checks.check_seed(None) is None
    assert checks.check_bool("flag", False) is False
    assert checks.check_choice("activation", None, ("softmax", None)) is None
    assert checks.check_choice("mode", "sample", ("argmax", "sample")) == "sample"
