"""What every layer of the family must do, checked the same way for each against float64
NumPy: `.keras` round trip, config round trip, mixed precision, XLA, `model.fit`, Keras masks
and `tf.distribute`."""

import inspect
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import keras
import numpy as np
import pytest
import tensorflow as tf

import attnkit
from attnkit.attention import (
    HardAttention,
    MultiHeadAttention,
    MultiHeadSelfAttention,
    MultiQueryAttention,
    SelfAttention,
)
from attnkit.position import LearnedPositionEmbedding, SinusoidalPositionEncoding
from grader.reference import attention as ref
from grader.reference import heads as hr
from tests.support import layers


def _np(x):
    return keras.ops.convert_to_numpy(x)


B, TQ, TK, M = 2, 3, 5, 2
LENGTHS = np.array([TK - 1, 0], "int32")  # example 1: every key is padding


def _floats(rng, *shape):
    return rng.normal(size=shape).astype("float32")


@dataclass(frozen=True)
class FamilyCase:
    id: str
    make: Callable  # () -> a new layer
    inputs: Callable  # rng -> {name: NumPy array}
    apply: Callable  # (layer, {name: tensor}) -> tuple of outputs
    reference: Callable  # ({weight name: float64 array}, {name: array}) -> tuple of arrays
    fit_input: str  # the float input a trainable Dense projects before the layer in `fit`

    def __str__(self):
        return self.id


def _qkv(rng):
    return {
        "query": _floats(rng, B, TQ, 4),
        "key": _floats(rng, B, TK, 3),
        "value": _floats(rng, B, TK, 2),
        "lengths": LENGTHS,
    }


def _sequence(rng):
    return {"inputs": _floats(rng, B, TK, 4), "lengths": np.array([TK, 0], "int32")}


def _hard_reference(w, x):
    keep = ref.length_mask(x["lengths"], TK)[:, None, :]
    alpha = ref.masked_softmax(ref.bilinear_scores(x["query"], x["key"], w["kernel"]), keep)
    selected, indices = hr.hard_attention(alpha, x["value"], keep)
    return selected, indices, alpha


def _multi_query_reference(w, x):
    keep = ref.length_mask(x["lengths"], TK)[:, None, :]
    outs, alphas = [], []
    for m in range(M):
        scores = ref.additive_scores(
            x["query"][:, :, m], x["key"], w["query_kernel"], w["key_kernel"], w["score_vector"]
        )
        alphas.append(ref.masked_softmax(scores, keep))
        outs.append(ref.attend(alphas[-1], x["value"]))
    return np.concatenate(outs, -1), np.stack(alphas, 2)


def _multi_head_reference(w, x):
    keep = ref.length_mask(x["lengths"], TK)[:, None, :] & ref.causal_mask(TQ, TK)[None]
    return hr.multi_head_attention(x["query"], x["key"], x["value"], w, keep)


def _sequence_keep(x, causal=False):
    real = ref.length_mask(x["lengths"], TK)
    keep = real[:, :, None] & real[:, None, :]
    return keep & ref.causal_mask(TK, TK)[None] if causal else keep


def _self_attention_reference(w, x):
    return hr.self_attention_columns(
        x["inputs"],
        w["query_kernel"],
        w["key_kernel"],
        w["value_kernel"],
        _sequence_keep(x),
        w["query_bias"],
        w["key_bias"],
        w["value_bias"],
    )


def _multi_head_self_reference(w, x):
    s = x["inputs"]
    return hr.multi_head_attention(s, s, s, w, _sequence_keep(x, causal=True))


CASES = [
    FamilyCase(
        "hard",
        lambda: HardAttention(attnkit.BilinearScore(), straight_through=True),
        _qkv,
        lambda layer, x: layer(
            x["query"],
            x["value"],
            key=x["key"],
            key_lengths=x["lengths"],
            return_attention_scores=True,
        ),
        _hard_reference,
        "query",
    ),
    FamilyCase(
        "multi_query",
        lambda: MultiQueryAttention(attnkit.AdditiveScore(3)),
        lambda rng: {**_qkv(rng), "query": _floats(rng, B, TQ, M, 4)},
        lambda layer, x: layer(
            x["query"],
            x["value"],
            key=x["key"],
            key_lengths=x["lengths"],
            return_attention_scores=True,
        ),
        _multi_query_reference,
        "value",
    ),
    FamilyCase(
        "multi_head",
        lambda: MultiHeadAttention(2, 3, value_dim=2, output_dim=5, dropout=0.1, seed=1),
        _qkv,
        lambda layer, x: layer(
            x["query"],
            x["value"],
            key=x["key"],
            key_lengths=x["lengths"],
            use_causal_mask=True,
            return_attention_scores=True,
        ),
        _multi_head_reference,
        "query",
    ),
    FamilyCase(
        "self_attention",
        lambda: SelfAttention(3, 2, use_bias=True),
        _sequence,
        lambda layer, x: layer(x["inputs"], key_lengths=x["lengths"], return_attention_scores=True),
        _self_attention_reference,
        "inputs",
    ),
    FamilyCase(
        "multi_head_self_attention",
        lambda: MultiHeadSelfAttention(2, 3, value_dim=2, use_causal_mask=True),
        _sequence,
        lambda layer, x: layer(x["inputs"], key_lengths=x["lengths"], return_attention_scores=True),
        _multi_head_self_reference,
        "inputs",
    ),
    FamilyCase(
        "sinusoidal",
        lambda: SinusoidalPositionEncoding(max_length=8, max_wavelength=100.0),
        lambda rng: {"inputs": _floats(rng, B, TK, 5)},
        lambda layer, x: (layer(x["inputs"]),),
        lambda w, x: (x["inputs"] + hr.sinusoidal_table(TK, 5, 100.0),),
        "inputs",
    ),
    FamilyCase(
        "learned",
        lambda: LearnedPositionEmbedding(8),
        lambda rng: {"inputs": _floats(rng, B, TK, 5)},
        lambda layer, x: (layer(x["inputs"]),),
        lambda w, x: (x["inputs"] + w["embeddings"][:TK],),
        "inputs",
    ),
]


def _weights(layer):
    return {layers.weight_name(w): np.asarray(_np(w), np.float64) for w in layer.weights}


def _built(case, rng):
    """A new layer with random weights, its inputs and the float64 expected outputs."""
    layer = case.make()
    x = case.inputs(rng)
    case.apply(layer, x)  # builds the layer
    weights = layers.random_weights(layer, rng)
    return layer, x, case.reference(weights, x)


def _check(got, expected, rtol=1e-5, atol=1e-5):
    if not isinstance(got, list | tuple):  # a one-output model's predict
        got = [got]
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        g = _np(g)
        if np.issubdtype(g.dtype, np.integer):
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def _json(config):
    return json.loads(json.dumps(config))


def _symbolic_inputs(x):
    return {
        name: keras.Input(array.shape[1:], dtype=str(array.dtype), name=name)
        for name, array in x.items()
    }


# ------------------------------------------------------------------------ save / load
@pytest.mark.parametrize("case", CASES, ids=str)
def test_keras_file_round_trip(case, rng, tmp_path):
    layer = case.make()
    x = case.inputs(rng)
    inputs = _symbolic_inputs(x)
    outputs = case.apply(layer, inputs)
    weights = layers.random_weights(layer, rng)
    expected = case.reference(weights, x)
    for symbolic, e in zip(outputs, expected, strict=True):  # compute_output_spec, Tq != Tk
        assert tuple(symbolic.shape) == (None, *e.shape[1:])
    model = keras.Model(inputs, list(outputs))
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    restored = loaded.get_layer(layer.name)
    assert type(restored) is type(layer)
    # (through JSON: a nested score's build config holds tuples, and lists once loaded)
    assert _json(restored.get_config()) == _json(layer.get_config())
    for m in (model, loaded):
        _check(m.predict(x, verbose=0), expected)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_config_round_trip(case, rng):
    layer, x, expected = _built(case, rng)
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    case.apply(clone, x)
    clone.set_weights(layer.get_weights())
    _check(case.apply(clone, x), expected)
    # Every constructor argument is in the config.
    params = set(inspect.signature(type(layer).__init__).parameters) - {"self", "kwargs"}
    assert params <= set(config)


# -------------------------------------------------------------------- mixed precision
@pytest.mark.parametrize("case", CASES, ids=str)
def test_mixed_precision(case, mixed_policy, rng):
    layer, x, expected = _built(case, rng)
    low = mixed_policy.split("_")[1]
    assert all(keras.backend.standardize_dtype(w.dtype) == "float32" for w in layer.weights)
    got = case.apply(layer, x)
    tol = 2e-2 if low == "float16" else 1e-1
    for g, e in zip(got, expected, strict=True):
        dtype = keras.backend.standardize_dtype(g.dtype)
        if dtype == "int32":
            np.testing.assert_array_equal(_np(g), e)
            continue
        assert dtype == low
        g = _np(tf.cast(g, "float64"))
        assert np.all(np.isfinite(g))
        np.testing.assert_allclose(g, e, atol=tol * max(1.0, np.abs(e).max()))


def test_float16_fill_does_not_overflow(mixed_float16, rng):
    """Large scores and padding together: the float16 fill value must stay finite."""
    layer = MultiHeadAttention(2, 4, kernel_initializer=keras.initializers.Constant(3.0))
    q = 3 * _floats(rng, 2, 3, 4)
    lengths = np.array([2, 0], "int32")
    out, alpha = layer(q, q, key_lengths=lengths, return_attention_scores=True)
    out, alpha = _np(tf.cast(out, "float32")), _np(tf.cast(alpha, "float32"))
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(alpha))
    np.testing.assert_array_equal(alpha[0, :, :, 2:], 0.0)
    np.testing.assert_array_equal(alpha[1], 0.0)
    np.testing.assert_allclose(alpha[0].sum(-1), 1.0, atol=1e-2)


# ------------------------------------------------------------------------------- XLA
@pytest.mark.parametrize("case", CASES, ids=str)
def test_jit_compile_matches_eager(case, rng):
    layer, x, expected = _built(case, rng)
    names = list(x)
    eager = case.apply(layer, x)
    run = tf.function(
        lambda *args: case.apply(layer, dict(zip(names, args, strict=True))), jit_compile=True
    )
    compiled = run(*x.values())
    _check(compiled, [_np(e) for e in eager], rtol=1e-5, atol=1e-6)
    _check(compiled, expected)


# ---------------------------------------------------------------------------- training
@pytest.mark.parametrize("case", CASES, ids=str)
def test_trains_inside_model_fit(case, rng):
    keras.utils.set_random_seed(0)
    layer = case.make()
    x = case.inputs(rng)
    inputs = _symbolic_inputs(x)
    projected = dict(inputs)
    d = x[case.fit_input].shape[-1]
    # A trainable projection in front, so that weightless layers have something to train
    # and the gradient must flow through the layer to reach it.
    projection = keras.layers.Dense(d, name="projection")
    projected[case.fit_input] = projection(inputs[case.fit_input])
    output = case.apply(layer, projected)[0]
    model = keras.Model(inputs, output)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", jit_compile=False)
    target = rng.normal(size=(B, *output.shape[1:])).astype("float32")
    # The key bias gets no gradient: it adds q_i·b_k to every score of row i, which the
    # softmax ignores.
    trained = [w for w in layer.trainable_weights if layers.weight_name(w) != "key_bias"]
    trained.append(projection.kernel)
    before = [_np(w).copy() for w in trained]
    losses = model.fit(x, target, epochs=8, batch_size=B, verbose=0).history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
    for b, w in zip(before, trained, strict=True):
        assert not np.allclose(b, _np(w)), w.path


# ----------------------------------------------------------------------- Keras masks
@pytest.mark.parametrize(
    "make", [lambda: MultiHeadAttention(2, 3), lambda: HardAttention("dot")], ids=["mha", "hard"]
)
def test_embedding_masks_fill_query_and_value_masks(make):
    tokens = np.array([[3, 5, 2, 0, 0], [4, 1, 0, 0, 0]])
    real = tokens != 0
    x = keras.layers.Embedding(10, 4, mask_zero=True)(tokens)
    outputs = make()(x, x, return_attention_scores=True)
    alpha = _np(outputs[-1])
    keep = real[:, :, None] & real[:, None, :]
    if alpha.ndim == 4:
        keep = np.broadcast_to(keep[:, None], alpha.shape)
    assert np.all(alpha[~keep] == 0.0)
    np.testing.assert_allclose(alpha.sum(-1), keep.any(-1).astype(float), atol=1e-6)
    np.testing.assert_array_equal(_np(outputs[0]._keras_mask), real)


# ----------------------------------------------------------------------- tf.distribute
DISTRIBUTED_SCRIPT = textwrap.dedent(
    """
    import json, os
    os.environ["KERAS_BACKEND"] = "tensorflow"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
    )
    import keras
    import numpy as np

    import attnkit
    from attnkit.attention import (
        HardAttention, MultiHeadAttention, MultiHeadSelfAttention, MultiQueryAttention,
        SelfAttention,
    )
    from attnkit.position import LearnedPositionEmbedding, SinusoidalPositionEncoding

    keras.utils.set_random_seed(0)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        tokens = keras.Input((6,), dtype="int32")
        lengths = keras.Input((), dtype="int32")
        x = keras.layers.Embedding(12, 8, mask_zero=True)(tokens)
        x = SinusoidalPositionEncoding(max_length=6)(x)
        x = LearnedPositionEmbedding(6)(x)
        x = SelfAttention(8, use_bias=True)(x, key_lengths=lengths)
        x = MultiHeadSelfAttention(2, 4, use_causal_mask=True)(x)
        x = MultiHeadAttention(2, 4, dropout=0.1, seed=1)(x, x, key_lengths=lengths)
        hard, _ = HardAttention(attnkit.BilinearScore(), straight_through=True)(x, x)
        many = MultiQueryAttention(attnkit.AdditiveScore(4))(
            keras.layers.Reshape((6, 2, 4))(x), x, key_lengths=lengths
        )
        pooled = keras.layers.GlobalAveragePooling1D()(
            keras.layers.Concatenate()([hard, many])
        )
        model = keras.Model([tokens, lengths], keras.layers.Dense(1)(pooled))
        model.compile(optimizer=keras.optimizers.Adam(0.02), loss="mse", jit_compile=False)
    rng = np.random.default_rng(0)
    n = 64
    data = rng.integers(1, 12, size=(n, 6))
    data_lengths = rng.integers(2, 7, size=n).astype("int32")
    data[np.arange(6)[None] >= data_lengths[:, None]] = 0
    target = (data == 3).sum(1, keepdims=True).astype("float32")
    history = model.fit([data, data_lengths], target, epochs=4, batch_size=32, verbose=0)
    mirrored = [len(strategy.experimental_local_results(w.value)) for w in model.weights]
    print(json.dumps({
        "replicas": strategy.num_replicas_in_sync,
        "losses": history.history["loss"],
        "copies": sorted(set(mirrored)),
    }))
    """
)


def test_trains_under_mirrored_strategy_on_two_devices():
    # Logical devices must be set before TensorFlow initialises its devices, which this
    # pytest process has long done: the check runs in a fresh Python process.
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(
        [sys.executable, "-c", DISTRIBUTED_SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["replicas"] == 2
    assert report["copies"] == [2]  # every weight is mirrored on both devices
    losses = report["losses"]
    assert np.all(np.isfinite(losses)) and losses[-1] < 0.9 * losses[0], losses
