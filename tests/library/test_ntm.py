"""The Neural Turing Machine: addressing functions, NTMCell and NeuralTuringMachine vs NumPy."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attnkit.memory import (
    NeuralTuringMachine,
    NTMCell,
    circular_shift,
    content_addressing,
    interpolate,
    sharpen,
)
from grader.reference import memory as memory_ref


def _np(x):
    return keras.ops.convert_to_numpy(x)


# (batch, heads or None, memory_size, width)
HEAD_SHAPES = [(1, None, 1, 1), (2, None, 5, 3), (3, 2, 4, 6), (2, 3, 7, 2)]


def _ids(shape):
    return "x".join("-" if v is None else str(v) for v in shape)


def _per_head(rng, b, h, low, high):
    return rng.uniform(low, high, size=(b,) if h is None else (b, h))


def _loop(fn, b, h, *arrays):
    """Applies a one-head reference to every example (and head)."""
    if h is None:
        return np.stack([fn(*(a[i] for a in arrays)) for i in range(b)])
    return np.stack(
        [np.stack([fn(*(a[i, j] for a in arrays)) for j in range(h)]) for i in range(b)]
    )


# --------------------------------------------------------------- addressing alone
@pytest.mark.parametrize("shape", HEAD_SHAPES, ids=_ids)
def test_content_addressing_matches_numpy(shape, rng):
    b, h, n, w = shape
    memory = rng.normal(size=(b, n, w))
    key = rng.normal(size=(b, w) if h is None else (b, h, w))
    beta = _per_head(rng, b, h, 0.0, 8.0)
    got = content_addressing(memory.astype("float32"), key.astype("float32"), beta)
    if h is None:
        expected = np.stack(
            [memory_ref.content_addressing(memory[i], key[i], beta[i]) for i in range(b)]
        )
    else:
        expected = np.stack(
            [
                np.stack(
                    [
                        memory_ref.content_addressing(memory[i], key[i, j], beta[i, j])
                        for j in range(h)
                    ]
                )
                for i in range(b)
            ]
        )
    np.testing.assert_allclose(_np(got), expected, rtol=1e-5, atol=1e-6)


def test_content_addressing_key_strength_and_mask(rng):
    memory = rng.normal(size=(2, 6, 4)).astype("float32")
    key = memory[:, 2] + 0.01  # nearly slot 2
    uniform = _np(content_addressing(memory, key, np.zeros(2)))
    np.testing.assert_allclose(uniform, np.full((2, 6), 1 / 6), rtol=1e-6)  # β = 0
    sharp = _np(content_addressing(memory, key, np.full((2, 1), 100.0)))
    assert np.all(sharp[:, 2] > 0.99)  # a large β focuses on the best match
    keep = np.array([[True, True, False, True, True, True], [False] * 6])
    masked = _np(content_addressing(memory, key, np.full(2, 3.0), memory_mask=keep))
    expected = [memory_ref.content_addressing(memory[0], key[0], 3.0, keep[0]), np.zeros(6)]
    np.testing.assert_allclose(masked, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shape", HEAD_SHAPES, ids=_ids)
def test_interpolate_matches_numpy(shape, rng):
    b, h, n, _ = shape
    heads = () if h is None else (h,)
    content = rng.dirichlet(np.ones(n), size=(b, *heads))
    previous = rng.dirichlet(np.ones(n), size=(b, *heads))
    gate = _per_head(rng, b, h, 0.0, 1.0)
    got = interpolate(content, previous, gate[..., None])  # (B, [H,] 1) is accepted too
    expected = _loop(lambda c, p, g: g * c + (1 - g) * p, b, h, content, previous, gate)
    np.testing.assert_allclose(_np(got), expected, rtol=1e-12)
    np.testing.assert_allclose(_np(interpolate(content, previous, np.ones(gate.shape))), content)
    np.testing.assert_allclose(_np(interpolate(content, previous, np.zeros(gate.shape))), previous)


@pytest.mark.parametrize("shift_range", [1, 2])
@pytest.mark.parametrize("shape", HEAD_SHAPES, ids=_ids)
def test_circular_shift_matches_numpy(shape, shift_range, rng):
    # Includes 2k + 1 > N (N = 1 with k = 1, 2): the offsets wrap around.
    b, h, n, _ = shape
    heads = () if h is None else (h,)
    weights = rng.dirichlet(np.ones(n), size=(b, *heads))
    shift = rng.dirichlet(np.ones(2 * shift_range + 1), size=(b, *heads))
    got = _np(circular_shift(weights, shift))
    expected = _loop(memory_ref.circular_shift, b, h, weights, shift)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got.sum(-1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("offset", [-1, 0, 1])
def test_circular_shift_one_hot_rotates(offset, rng):
    weights = rng.dirichlet(np.ones(5), size=2)
    shift = np.zeros((2, 3))
    shift[:, offset + 1] = 1.0
    np.testing.assert_allclose(_np(circular_shift(weights, shift)), np.roll(weights, offset, -1))


@pytest.mark.parametrize("shape", HEAD_SHAPES, ids=_ids)
def test_sharpen_matches_numpy(shape, rng):
    b, h, n, _ = shape
    heads = () if h is None else (h,)
    weights = rng.dirichlet(np.ones(n), size=(b, *heads))
    gamma = _per_head(rng, b, h, 1.0, 6.0)
    expected = _loop(memory_ref.sharpen, b, h, weights, gamma)
    np.testing.assert_allclose(_np(sharpen(weights, gamma)), expected, rtol=1e-10)


def test_sharpen_zeros_stay_zero_with_finite_gradients():
    weights = tf.constant([[0.0, 0.2, 0.8, 0.0], [0.0, 0.0, 0.0, 0.0]])
    gamma = tf.constant([2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch([weights, gamma])
        out = sharpen(weights, gamma)
        loss = tf.reduce_sum(out * [[1.0, 2.0, 3.0, 4.0]])
    grads = tape.gradient(loss, [weights, gamma])
    out = _np(out)
    np.testing.assert_allclose(out[0], [0, 0.04 / 0.68, 0.64 / 0.68, 0], rtol=1e-6)
    np.testing.assert_array_equal(out[1], 0.0)  # an all-zero row gives zeros, not NaN
    for g in grads:
        assert np.all(np.isfinite(_np(g)))
    assert _np(grads[1])[0] != 0.0


# ------------------------------------------------------------------ NTM vs NumPy
CONFIGS = [
    dict(controller="lstm", num_read_heads=1, num_write_heads=1, shift_range=1, memory_size=5),
    dict(controller="dense", num_read_heads=2, num_write_heads=1, shift_range=1, memory_size=6),
    dict(controller="lstm", num_read_heads=2, num_write_heads=2, shift_range=2, memory_size=4),
]
CONFIG_IDS = ["lstm_1r1w", "dense_2r1w", "lstm_2r2w_k2"]


def _make_ntm(rng, config, units=3, width=4, controller_units=6, dtype="float64", **kwargs):
    layer = NeuralTuringMachine(
        units,
        memory_width=width,
        controller_units=controller_units,
        dtype=dtype,
        **config,
        **kwargs,
    )
    return layer


def _weights(layer, rng, input_dim, scale=0.8):
    """Random weights (bigger than the default init, so that every head is exercised)."""
    cell = layer.cell
    layer.build((None, None, input_dim))
    values = {}
    for name, var in [
        ("kernel", cell.controller_layer.kernel),
        ("bias", cell.controller_layer.bias),
        ("head_kernel", cell.head_layer.kernel),
        ("head_bias", cell.head_layer.bias),
        ("out_kernel", cell.output_layer.kernel),
        ("out_bias", cell.output_layer.bias),
    ]:
        values[name] = rng.normal(scale=scale, size=var.shape)
        var.assign(values[name].astype(var.dtype))
    if cell.controller == "lstm":
        var = cell.controller_layer.recurrent_kernel
        values["recurrent_kernel"] = rng.normal(scale=scale, size=var.shape)
        var.assign(values["recurrent_kernel"].astype(var.dtype))
    return values


def _cfg(layer):
    c = layer.cell
    names = [
        "units",
        "memory_size",
        "memory_width",
        "controller",
        "controller_units",
        "num_read_heads",
        "num_write_heads",
        "shift_range",
    ]
    return {name: getattr(c, name) for name in names}


@pytest.mark.parametrize("steps", [1, 4])
@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_ntm_matches_numpy(config, steps, rng):
    layer = _make_ntm(rng, config)
    weights = _weights(layer, rng, input_dim=3)
    x = rng.normal(size=(2, steps, 3))
    out, read_w, write_w = layer(x, return_attention_scores=True)
    expected = memory_ref.ntm_sequence(x, weights, _cfg(layer))
    np.testing.assert_allclose(_np(out), expected[0], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(_np(read_w), expected[1], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(_np(write_w), expected[2], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(_np(read_w).sum(-1), 1.0, rtol=1e-9)
    # The last state's memory is the reference's final memory.
    final_memory = _np(keras.layers.RNN(layer.cell, return_state=True, dtype="float64")(x)[-1])
    np.testing.assert_allclose(final_memory.reshape(expected[3].shape), expected[3], atol=1e-10)


def test_float32_ntm_matches_numpy_and_cell_in_keras_rnn(rng):
    layer = _make_ntm(rng, CONFIGS[1], dtype="float32")
    weights = _weights(layer, rng, input_dim=3, scale=0.5)
    x = rng.normal(size=(3, 5, 3)).astype("float32")
    expected = memory_ref.ntm_sequence(x, weights, _cfg(layer))[0]
    np.testing.assert_allclose(_np(layer(x)), expected, rtol=1e-4, atol=1e-5)
    # The cell alone in keras.layers.RNN (without the addressing outputs) gives y_t.
    cell = NTMCell(**{**_cfg(layer)})
    rnn = keras.layers.RNN(cell, return_sequences=True)
    rnn.build((None, None, 3))
    cell.set_weights(layer.cell.get_weights())
    assert cell.output_size == 3
    np.testing.assert_allclose(_np(rnn(x)), expected, rtol=1e-4, atol=1e-5)


def test_padded_steps_leave_the_state_unchanged(rng):
    layer = _make_ntm(rng, CONFIGS[0], return_sequences=False)
    weights = _weights(layer, rng, input_dim=2)
    x = rng.normal(size=(2, 5, 2))
    mask = np.array([[True, True, True, False, False], [True] * 5])
    last = _np(layer(x, mask=mask))
    expected_short = memory_ref.ntm_sequence(x[:1, :3], weights, _cfg(layer))[0][0, -1]
    expected_full = memory_ref.ntm_sequence(x[1:], weights, _cfg(layer))[0][0, -1]
    np.testing.assert_allclose(last[0], expected_short, rtol=1e-9)
    np.testing.assert_allclose(last[1], expected_full, rtol=1e-9)
    # A Keras mask from a masking layer is used the same way.
    inputs = keras.Input((5, 2), dtype="float64")
    masked = keras.layers.Masking(0.0, dtype="float64")(inputs)
    model = keras.Model(inputs, layer(masked))
    padded = np.where(mask[..., None], x, 0.0)
    np.testing.assert_allclose(_np(model(padded))[0], expected_short, rtol=1e-9)


def test_gradients_reach_inputs_and_every_weight(rng):
    layer = _make_ntm(rng, CONFIGS[2], dtype="float32")
    _weights(layer, rng, input_dim=3, scale=0.5)
    x = tf.constant(rng.normal(size=(2, 4, 3)).astype("float32"))
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(layer(x) ** 2)
    grads = tape.gradient(loss, [x, *layer.trainable_weights])
    assert len(layer.trainable_weights) == 7  # LSTM (3) + heads (2) + output (2)
    for g in grads:
        assert g is not None
        g = _np(g)
        assert np.all(np.isfinite(g)) and np.any(g != 0)


def test_trains_inside_model_fit(rng):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((4, 3))
    outputs = NeuralTuringMachine(2, memory_size=5, memory_width=3, controller_units=8)(inputs)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    x = rng.normal(size=(16, 4, 3)).astype("float32")
    y = x[:, :, :2]
    losses = model.fit(x, y, epochs=4, batch_size=8, verbose=0).history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]


# ------------------------------------------------------ precision, XLA, save / load
def test_mixed_precision_has_no_nan(mixed_policy, rng):
    low = mixed_policy.split("_")[1]
    layer = NeuralTuringMachine(3, memory_size=6, memory_width=4, controller_units=8)
    x = (5 * rng.normal(size=(2, 6, 3))).astype("float32")
    out, read_w, write_w = layer(x, return_attention_scores=True)
    assert keras.backend.standardize_dtype(out.dtype) == low
    for t in (out, read_w, write_w):
        assert np.all(np.isfinite(_np(tf.cast(t, "float32"))))
    np.testing.assert_allclose(_np(tf.cast(read_w, "float32")).sum(-1), 1.0, atol=1e-2)
    # Same weights in float32: close. The policy is reset first, or ref32 computes in `low` too.
    keras.config.set_dtype_policy("float32")
    ref32 = NeuralTuringMachine(3, memory_size=6, memory_width=4, controller_units=8)
    ref32.build((None, 6, 3))
    ref32.set_weights(layer.get_weights())
    expected = _np(ref32(x))
    assert keras.backend.standardize_dtype(expected.dtype) == "float32"
    np.testing.assert_allclose(_np(tf.cast(out, "float32")), expected, atol=5e-2)


def test_jit_compile_matches_eager(rng):
    layer = _make_ntm(rng, CONFIGS[1], dtype="float32")
    _weights(layer, rng, input_dim=3, scale=0.5)
    x = rng.normal(size=(2, 4, 3)).astype("float32")

    def run(inputs):
        return layer(inputs, return_attention_scores=True)

    eager = run(x)
    compiled = tf.function(run, jit_compile=True)(x)
    for e, c in zip(eager, compiled, strict=True):
        np.testing.assert_allclose(_np(c), _np(e), rtol=1e-5, atol=1e-6)


def test_keras_file_round_trip(rng, tmp_path):
    inputs = keras.Input((4, 3))
    out, read_w, _ = NeuralTuringMachine(
        2,
        memory_size=5,
        memory_width=3,
        controller="dense",
        controller_units=7,
        num_read_heads=2,
        shift_range=2,
        activation="sigmoid",
        name="ntm",
    )(inputs, return_attention_scores=True)
    assert tuple(out.shape) == (None, 4, 2) and tuple(read_w.shape) == (None, 4, 2, 5)
    model = keras.Model(inputs, [out, read_w])
    x = rng.normal(size=(3, 4, 3)).astype("float32")
    before = model.predict(x, verbose=0)
    model.save(tmp_path / "ntm.keras")
    loaded = keras.saving.load_model(tmp_path / "ntm.keras")
    after = loaded.predict(x, verbose=0)
    for b, a in zip(before, after, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert np.all((before[0] > 0) & (before[0] < 1))  # the sigmoid activation survived
    restored = loaded.get_layer("ntm")
    assert restored.get_config() == model.get_layer("ntm").get_config()


@pytest.mark.parametrize("cls", [NTMCell, NeuralTuringMachine])
def test_config_round_trip(cls, rng):
    kwargs = dict(
        memory_size=7,
        memory_width=3,
        controller="dense",
        controller_units=5,
        num_read_heads=2,
        num_write_heads=2,
        shift_range=2,
        activation="tanh",
        kernel_initializer="he_normal",
    )
    layer = cls(4, **kwargs)
    config = layer.get_config()
    for name, value in kwargs.items():
        if name not in ("activation", "kernel_initializer"):
            assert config[name] == value
    clone = cls.from_config(config)
    assert clone.get_config() == config
    if cls is NeuralTuringMachine:
        x = rng.normal(size=(2, 3, 2)).astype("float32")
        layer(x)
        clone(x)
        clone.set_weights(layer.get_weights())
        np.testing.assert_allclose(_np(clone(x)), _np(layer(x)), rtol=1e-6)
        assert config["return_sequences"] is True


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"units": 0}, "units=0"),
        ({"memory_size": 0}, "memory_size=0"),
        ({"memory_width": 0}, "memory_width=0"),
        ({"controller_units": -3}, "controller_units=-3"),
        ({"num_read_heads": 0}, "num_read_heads=0"),
        ({"num_write_heads": 1.5}, "num_write_heads=1.5"),
        ({"shift_range": 0}, "shift_range=0"),
        ({"controller": "gru"}, "controller='gru'"),
        ({"activation": "nope"}, "activation='nope'"),
        ({"kernel_initializer": "nope"}, "kernel_initializer='nope'"),
    ],
)
@pytest.mark.parametrize("cls", [NTMCell, NeuralTuringMachine])
def test_constructor_errors(cls, kwargs, fragment):
    kwargs = {"units": 2, **kwargs}
    with pytest.raises(ValueError, match="Received:") as info:
        cls(**kwargs)
    assert fragment in str(info.value)


def test_layer_and_cell_specific_errors():
    with pytest.raises(ValueError, match="return_sequences=1"):
        NeuralTuringMachine(2, return_sequences=1)
    with pytest.raises(ValueError, match="return_addressing='yes'"):
        NTMCell(2, return_addressing="yes")
    with pytest.raises(ValueError, match=r"input_shape=\(2, 3\)"):
        NeuralTuringMachine(2)(np.zeros((2, 3), "float32"))


W4 = np.full((2, 4), 0.25)
M = np.zeros((2, 4, 3), "float32")


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (
            lambda: content_addressing(np.zeros((2, 0, 3)), np.zeros((2, 3)), np.ones(2)),
            "memory_size=0",
        ),
        (lambda: content_addressing(M, np.zeros((2, 5)), np.ones(2)), "key with shape (2, 5)"),
        (lambda: content_addressing(M, np.zeros((3,)), np.ones(2)), "key with shape (3,)"),
        (
            lambda: content_addressing(M, np.zeros((2, 3)), np.ones((2, 2))),
            "beta with shape (2, 2)",
        ),
        (
            lambda: interpolate(W4, np.full((2, 5), 0.2), np.ones(2)),
            "previous_weights with shape (2, 5)",
        ),
        (lambda: interpolate(W4, W4, np.ones((2, 3))), "gate with shape (2, 3)"),
        (lambda: interpolate(np.zeros((2, 0)), np.zeros((2, 0)), np.ones(2)), "memory_size=0"),
        (lambda: circular_shift(W4, np.ones((2, 2)) / 2), "shift with shape (2, 2)"),
        (lambda: circular_shift(W4, np.ones((2, 1, 3)) / 3), "shift with shape (2, 1, 3)"),
        (lambda: circular_shift(np.ones(4), np.ones((2, 3))), "weights with shape (4,)"),
        (lambda: sharpen(W4, np.ones((2, 4))), "gamma with shape (2, 4)"),
    ],
)
def test_addressing_errors(call, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        call()
    assert fragment in str(info.value)
