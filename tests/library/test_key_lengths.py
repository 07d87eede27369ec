"""One name for valid lengths in every layer, `key_lengths`; the names it replaced (`lengths`,
`input_lengths`, `source_lengths`, `memory_lengths`, `pattern_lengths`) still work, with a
DeprecationWarning, and mean the same."""

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import keras
import numpy as np
import pytest

import attnkit
from attnkit.checks import renamed_argument

B = 2


@dataclass(frozen=True)
class Renamed:
    id: str
    make: Callable  # () -> a layer
    inputs: Callable  # (rng) -> positional inputs
    call: Callable  # (layer, inputs, **lengths) -> output(s)
    old_name: str
    lengths: tuple = (3, 1)

    def __str__(self):
        return self.id


def _floats(rng, *shape):
    return rng.normal(size=shape).astype("float32")


def _story(rng):
    story = rng.integers(1, 9, size=(B, 4, 3)).astype("int32")
    return story, rng.integers(1, 9, size=(B, 2)).astype("int32")


CASES = [
    Renamed(
        "SelfAttention",
        lambda: attnkit.SelfAttention(4),
        lambda rng: (_floats(rng, B, 4, 5),),
        lambda layer, x, **kw: layer(*x, **kw),
        "lengths",
    ),
    Renamed(
        "MultiHeadSelfAttention",
        lambda: attnkit.MultiHeadSelfAttention(2, 3),
        lambda rng: (_floats(rng, B, 4, 5),),
        lambda layer, x, **kw: layer(*x, **kw),
        "lengths",
    ),
    Renamed(
        "PointerNetwork",
        lambda: attnkit.PointerNetwork(4),
        lambda rng: (_floats(rng, B, 4, 2), np.array([[2, 0, 1], [0, 0, 0]], "int32")),
        lambda layer, x, **kw: layer(*x, **kw),
        "input_lengths",
    ),
    Renamed(
        "PointerNetwork.decode",
        lambda: attnkit.PointerNetwork(4),
        lambda rng: (_floats(rng, B, 4, 2),),
        lambda layer, x, **kw: layer.decode(*x, **kw)[1],
        "input_lengths",
    ),
    Renamed(
        "BahdanauDecoder",
        lambda: attnkit.BahdanauDecoder(7, 3, 4),
        lambda rng: (np.array([[1, 2, 3], [1, 4, 0]], "int32"), _floats(rng, B, 4, 5)),
        lambda layer, x, **kw: layer(*x, **kw),
        "source_lengths",
    ),
    Renamed(
        "BahdanauDecoder.decode",
        lambda: attnkit.BahdanauDecoder(7, 3, 4),
        lambda rng: (_floats(rng, B, 4, 5), 1, 3),
        lambda layer, x, **kw: layer.decode(*x, **kw)[1],
        "source_lengths",
    ),
    Renamed(
        "EndToEndMemoryNetwork",
        lambda: attnkit.EndToEndMemoryNetwork(9, 4, hops=2),
        _story,
        lambda layer, x, **kw: layer(*x, **kw),
        "memory_lengths",
    ),
    Renamed(
        "ModernHopfield",
        lambda: attnkit.ModernHopfield(2.0),
        lambda rng: (_floats(rng, B, 2, 3), _floats(rng, B, 4, 3)),
        lambda layer, x, **kw: layer(*x, **kw),
        "pattern_lengths",
    ),
]


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_old_name_warns_and_means_key_lengths(case, rng):
    layer = case.make()
    inputs = case.inputs(rng)
    lengths = np.array(case.lengths, "int32")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the new name never warns
        new = _np(case.call(layer, inputs, key_lengths=lengths))
    with pytest.warns(DeprecationWarning, match=f"`{case.old_name}` is deprecated.*`key_lengths`"):
        old = _np(case.call(layer, inputs, **{case.old_name: lengths}))
    np.testing.assert_array_equal(old, new)
    assert not np.array_equal(new, _np(case.call(layer, inputs)))  # the lengths do mask


@pytest.mark.parametrize("case", CASES, ids=str)
def test_both_names_at_once_are_refused(case, rng):
    lengths = np.array(case.lengths, "int32")
    with pytest.raises(ValueError, match=f"Received: both key_lengths and {case.old_name}"):
        case.call(case.make(), case.inputs(rng), key_lengths=lengths, **{case.old_name: lengths})


def test_renamed_argument():
    assert renamed_argument("new", 1, "old", None) == 1
    assert renamed_argument("new", None, "old", None) is None
    with pytest.warns(DeprecationWarning, match="`old` is deprecated and will be removed"):
        assert renamed_argument("new", None, "old", 2) == 2


def test_the_old_name_works_in_a_functional_model(rng):
    x = _floats(rng, B, 4, 5)
    inputs, lengths = keras.Input((4, 5)), keras.Input((), dtype="int32")
    layer = attnkit.SelfAttention(4)
    with pytest.warns(DeprecationWarning):
        model = keras.Model([inputs, lengths], layer(inputs, lengths=lengths))
    lengths_value = np.array([3, 1], "int32")
    np.testing.assert_allclose(
        _np(model([x, lengths_value])), _np(layer(x, key_lengths=lengths_value)), rtol=1e-6
    )
