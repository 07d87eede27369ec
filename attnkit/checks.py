"""Argument checks shared by attnkit's layers: each raises a ValueError that names the argument
and the value received, in Keras's style (`... Received: num_heads=0`)."""

import numbers

import keras


def check_positive_int(name, value):
    """Raises a ValueError unless `value` is a positive int (bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"`{name}` must be a positive integer. Received: {name}={value!r}")


def get_initializer(name, value):
    """`keras.initializers.get(value)` with a ValueError that names the argument."""
    try:
        initializer = keras.initializers.get(value)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"`{name}` must be a Keras initializer. Received: {name}={value!r}"
        ) from error
    if initializer is None:
        raise ValueError(f"`{name}` must be a Keras initializer. Received: {name}={value!r}")
    return initializer


def check_rate(name, value):
    """Raises a ValueError unless `value` is a real number in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < 1:
        raise ValueError(f"`{name}` must be a float in [0, 1). Received: {name}={value!r}")
    return float(value)


def check_seed(value):
    """Raises a ValueError unless `value` is `None` or an int (bools are refused)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"`seed` must be None or an integer. Received: seed={value!r}")
    return value


def check_bool(name, value):
    """Raises a ValueError unless `value` is a bool."""
    if not isinstance(value, bool):
        raise ValueError(f"`{name}` must be a bool. Received: {name}={value!r}")
    return value


def check_optional_positive_int(name, value):
    """Raises a ValueError unless `value` is `None` or a positive int."""
    if value is not None:
        check_positive_int(name, value)
    return value
