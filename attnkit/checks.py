"""Argument checks shared by attnkit's layers: each raises a ValueError that names the argument
and the value received, in Keras's style (`... Received: num_heads=0`), and returns the value
(normalised where it says so), so that a constructor reads `self.x = check_...("x", x)`.

Also the one way a renamed argument keeps working: `renamed_argument`."""

import math
import numbers
import warnings

import keras


def _refuse(name, value, what):
    raise ValueError(f"`{name}` must be {what}. Received: {name}={value!r}")


def check_rank_3(name, shape):
    """Raises a ValueError unless `shape` is that of a `(batch_size, length, features)` tensor."""
    if len(shape) != 3:
        raise ValueError(
            f"`{name}` must have shape (batch_size, length, features). "
            f"Received: {name}_shape={shape}"
        )


def check_positive_int(name, value):
    """Raises a ValueError unless `value` is a positive int (bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        _refuse(name, value, "a positive integer")
    return value


def check_optional_positive_int(name, value):
    """Raises a ValueError unless `value` is `None` or a positive int."""
    if value is not None:
        check_positive_int(name, value)
    return value


def check_positive_number(name, value, finite=True, what=None):
    """Raises a ValueError unless `value` is a real number > 0 (and finite when `finite`);
    returns it as a float. `what` replaces the description in the message."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not float(value) > 0
        or (finite and math.isinf(float(value)))
    ):
        _refuse(name, value, what or ("a positive finite float" if finite else "a positive number"))
    return float(value)


def check_rate(name, value):
    """Raises a ValueError unless `value` is a real number in [0, 1); returns it as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < 1:
        _refuse(name, value, "a float in [0, 1)")
    return float(value)


def check_seed(value, name="seed"):
    """Raises a ValueError unless `value` is `None` or an int (bools are refused)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        _refuse(name, value, "None or an integer")
    return value


def check_bool(name, value):
    """Raises a ValueError unless `value` is a bool."""
    if not isinstance(value, bool):
        _refuse(name, value, "a bool")
    return value


def check_choice(name, value, choices):
    """Raises a ValueError unless `value` is one of `choices` (strings, and `None` where it is
    one of them)."""
    if not (isinstance(value, str) or value is None) or value not in choices:
        _refuse(name, value, f"one of {', '.join(map(repr, choices))}")
    return value


def get_initializer(name, value):
    """`keras.initializers.get(value)` with a ValueError that names the argument."""
    try:
        initializer = keras.initializers.get(value)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"`{name}` must be a Keras initializer. Received: {name}={value!r}"
        ) from error
    if initializer is None:
        _refuse(name, value, "a Keras initializer")
    return initializer


def renamed_argument(new_name, new_value, old_name, old_value):
    """The value of an argument that was called `old_name` before it became `new_name`.

    Giving the old name still works, with a DeprecationWarning; giving both is an error.
    """
    if old_value is None:
        return new_value
    if new_value is not None:
        raise ValueError(
            f"`{old_name}` is the old name of `{new_name}`: give only `{new_name}`. "
            f"Received: both {new_name} and {old_name}"
        )
    warnings.warn(
        f"`{old_name}` is deprecated and will be removed: use `{new_name}`.",
        DeprecationWarning,
        stacklevel=3,
    )
    return old_value
