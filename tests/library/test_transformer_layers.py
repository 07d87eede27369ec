"""What every layer of the Transformer family must do, checked once for all of them: a complete
`get_config`, a `.keras` round trip, mixed precision, float64 on every path, and XLA."""

import dataclasses
import json
from collections.abc import Callable

import keras
import numpy as np
import pytest
import tensorflow as tf

import attnkit


@dataclasses.dataclass
class Case:
    """A layer, the shapes of its inputs (without the batch axis) and how it is called."""

    make: Callable  # (dtype) -> layer
    shapes: tuple
    call: Callable = lambda layer, *xs: layer(*xs)


def _decode_twice(layer, x):
    """The output of a one-token step after one earlier step, through the cache."""
    if not layer.built:
        layer.build(x.shape)
    cache = layer.empty_cache(keras.ops.shape(x)[0], 2)
    _, cache = layer(x[:, :1], self_attention_cache=cache, self_attention_cache_update_index=0)
    out, _ = layer(x[:, 1:2], self_attention_cache=cache, self_attention_cache_update_index=1)
    return out


CASES = {
    "rotary": Case(
        lambda dtype: attnkit.RotaryEmbedding(pairing="adjacent", dtype=dtype), ((4, 2, 6),)
    ),
    "alibi": Case(lambda dtype: attnkit.AlibiBias(dtype=dtype), ((3, 4, 4),)),
    "gqa": Case(
        lambda dtype: attnkit.GroupedQueryAttention(
            4, 2, 3, use_rotary=False, sliding_window=3, dropout=0.1, seed=1, dtype=dtype
        ),
        ((4, 6), (5, 6)),
    ),
    "gqa-causal-rotary": Case(
        lambda dtype: attnkit.GroupedQueryAttention(
            2, 1, 4, use_rotary=True, use_alibi=True, dtype=dtype
        ),
        ((4, 6),),
        lambda layer, x: layer(x, x, use_causal_mask=True),
    ),
    "layer-norm": Case(lambda dtype: attnkit.LayerNorm(dtype=dtype), ((4, 6),)),
    "rms-norm": Case(lambda dtype: attnkit.RMSNorm(dtype=dtype), ((4, 6),)),
    "swiglu": Case(
        lambda dtype: attnkit.FeedForward(8, "swiglu", dropout=0.1, dtype=dtype), ((4, 6),)
    ),
    "encoder": Case(
        lambda dtype: attnkit.TransformerEncoderBlock(
            2, 8, dropout=0.1, activation="gelu", dtype=dtype
        ),
        ((4, 6),),
    ),
    "decoder": Case(
        lambda dtype: attnkit.TransformerDecoderBlock(2, 8, norm_first=True, dtype=dtype),
        ((4, 6), (3, 6)),
    ),
    "decoder-modern": Case(
        lambda dtype: attnkit.TransformerDecoderBlock(
            2,
            8,
            num_key_value_heads=1,
            norm_first=True,
            normalization="rms",
            activation="swiglu",
            use_rotary=True,
            dtype=dtype,
        ),
        ((4, 8),),
    ),
    "decoder-cached": Case(
        lambda dtype: attnkit.TransformerDecoderBlock(2, 8, use_rotary=True, dtype=dtype),
        ((4, 8),),
        _decode_twice,
    ),
}


def _inputs(case, rng, dtype="float32", batch=2):
    return [rng.normal(size=(batch, *shape)).astype(dtype) for shape in case.shapes]


def _json(config):
    return json.loads(json.dumps(config, default=str))


def _model(case, dtype="float32"):
    inputs = [keras.Input(shape, dtype=dtype) for shape in case.shapes]
    return keras.Model(inputs, case.call(case.make(dtype), *inputs))


def _copy_weights(source, target):
    for s, t in zip(source.weights, target.weights, strict=True):
        t.assign(keras.ops.cast(s, t.dtype))


@pytest.mark.parametrize("name", CASES)
def test_config_round_trip(name):
    layer = CASES[name].make("float32")
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert _json(clone.get_config()) == _json(config)


@pytest.mark.parametrize(
    "name", ["rotary", "gqa", "gqa-causal-rotary", "encoder", "decoder", "decoder-modern"]
)
def test_keras_file_round_trip(name, rng, tmp_path):
    case = CASES[name]
    model = _model(case)
    for w in model.weights:
        w.assign(rng.normal(scale=0.5, size=w.shape).astype("float32"))
    inputs = _inputs(case, rng)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(loaded(inputs)),
        keras.ops.convert_to_numpy(model(inputs)),
        atol=1e-6,
    )
    restored = [layer for layer in loaded.layers if isinstance(layer, type(case.make("float32")))]
    assert _json(restored[0].get_config()) == _json(model.layers[-1].get_config())


@pytest.mark.parametrize("name", CASES)
def test_mixed_float16_returns_float16_close_to_float32(name, rng, mixed_float16):
    case = CASES[name]
    inputs = _inputs(case, rng)
    layer = case.make(None)
    out = case.call(layer, *inputs)
    assert keras.backend.standardize_dtype(out.dtype) == "float16"
    exact = case.make("float32")
    case.call(exact, *inputs)
    _copy_weights(layer, exact)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(out).astype("float32"),
        keras.ops.convert_to_numpy(case.call(exact, *inputs)),
        rtol=2e-2,
        atol=2e-2,
    )


@pytest.mark.parametrize("name", CASES)
def test_float64_on_every_path(name, rng):
    """A float64 layer keeps float64 weights and outputs, and agrees with its float32 twin to
    float32 precision (float64 numerics against NumPy: the layers' own tests)."""
    case = CASES[name]
    inputs = _inputs(case, rng, "float64")
    layer = case.make("float64")
    out = case.call(layer, *inputs)
    assert keras.backend.standardize_dtype(out.dtype) == "float64"
    assert all(keras.backend.standardize_dtype(w.dtype) == "float64" for w in layer.weights)
    twin = case.make("float32")
    case.call(twin, *[x.astype("float32") for x in inputs])
    _copy_weights(layer, twin)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(out),
        keras.ops.convert_to_numpy(case.call(twin, *[x.astype("float32") for x in inputs])),
        rtol=1e-4,
        atol=1e-5,
    )


@pytest.mark.parametrize("name", CASES)
def test_jit_compiled_call_matches_eager(name, rng):
    case = CASES[name]
    inputs = _inputs(case, rng)
    layer = case.make("float32")
    eager = case.call(layer, *inputs)
    compiled = tf.function(lambda *xs: case.call(layer, *xs), jit_compile=True)(*inputs)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(compiled), keras.ops.convert_to_numpy(eager), atol=1e-5
    )


def test_jit_compiled_gradients_match_eager(rng):
    """The backward pass of the modern block (RMSNorm, SwiGLU, grouped-query, rotary) under XLA."""
    case = CASES["decoder-modern"]
    (x,) = _inputs(case, rng)
    layer = case.make("float32")
    layer(x)

    def gradients(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(layer(x)))
        return tape.gradient(loss, layer.trainable_variables)

    eager = gradients(tf.constant(x))
    compiled = tf.function(gradients, jit_compile=True)(tf.constant(x))
    assert np.abs(eager[0].numpy()).max() > 0  # the query kernel's
    for e, c in zip(eager, compiled, strict=True):
        assert np.all(np.isfinite(c.numpy()))
        np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-4, atol=1e-5)
