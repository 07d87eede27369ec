"""PointerNetwork against a step-by-step float64 NumPy pointer network (NNDL (8.12)-(8.15))."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attnkit.pointer import PointerNetwork
from grader.reference import attention as ref
from grader.reference import pointer as pointer_ref
from grader.reference import recurrent as recurrent_ref


def _np(x):
    return keras.ops.convert_to_numpy(x)


def weights_of(layer):
    return {
        "encoder": recurrent_ref.cell_weights(layer.encoder.cell),
        "decoder": recurrent_ref.cell_weights(layer.decoder.cell),
        "query_kernel": ref.as64(layer.score.query_kernel.numpy()),
        "key_kernel": ref.as64(layer.score.key_kernel.numpy()),
        "score_vector": ref.as64(layer.score.score_vector.numpy()),
        "start": ref.as64(layer.start_input.numpy()),
    }


def _pointer(rng, b, n, d, units, mask_chosen=True):
    layer = PointerNetwork(units, mask_chosen=mask_chosen)
    x = rng.normal(size=(b, n, d)).astype("float32")
    layer.build(x.shape)
    for weight in layer.weights:
        weight.assign(rng.normal(0.0, 0.8, tuple(weight.shape)).astype("float32"))
    return layer, x


def _targets(rng, lengths, m):
    """Distinct valid positions for each example (a prefix of a random permutation)."""
    return np.stack([rng.permutation(int(n))[:m] for n in lengths]).astype("int32")


# (batch, N, M, d, units)
SHAPES = [(1, 1, 1, 1, 2), (2, 5, 5, 1, 4), (3, 4, 2, 3, 5), (2, 6, 4, 2, 3)]


@pytest.mark.parametrize("with_lengths", [False, True], ids=["full", "lengths"])
@pytest.mark.parametrize("mask_chosen", [True, False], ids=["mask_chosen", "no_mask"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_teacher_forcing_matches_numpy(shape, mask_chosen, with_lengths, rng):
    b, n, m, d, units = shape
    layer, x = _pointer(rng, b, n, d, units, mask_chosen)
    lengths = rng.integers(m, n + 1, b).astype("int32") if with_lengths else np.full(b, n)
    targets = _targets(rng, lengths, m)
    kwargs = {"key_lengths": lengths} if with_lengths else {}
    probs = layer(x, targets, **kwargs)
    expected, _ = pointer_ref.pointer_network(
        weights_of(layer), x, ref.length_mask(lengths, n), targets=targets, mask_chosen=mask_chosen
    )
    np.testing.assert_allclose(_np(probs), expected, rtol=1e-4, atol=1e-5)
    if mask_chosen:  # earlier targets get exactly zero probability
        for m_step in range(1, m):
            rows = np.arange(b)[:, None]
            assert np.all(_np(probs)[rows, m_step, targets[:, :m_step]] == 0.0)


@pytest.mark.parametrize("mask_chosen", [True, False], ids=["mask_chosen", "no_mask"])
def test_greedy_decoding_matches_numpy(mask_chosen, rng):
    layer, x = _pointer(rng, 4, 6, 2, 5, mask_chosen)
    lengths = np.array([6, 3, 5, 1], "int32")
    indices, probs = layer.decode(x, key_lengths=lengths)
    expected_probs, expected_indices = pointer_ref.pointer_network(
        weights_of(layer), x, ref.length_mask(lengths, 6), steps=6, mask_chosen=mask_chosen
    )
    # Steps after every valid position is chosen have all-zero rows; the argmax there is 0.
    np.testing.assert_allclose(_np(probs), expected_probs, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(_np(indices), expected_indices)
    if mask_chosen:  # the first `length` picks are a permutation of the valid positions
        for row, n in zip(_np(indices), lengths, strict=True):
            assert sorted(row[:n]) == list(range(n))
    # Without targets, the call decodes greedily.
    np.testing.assert_allclose(
        _np(layer(x, key_lengths=lengths)), expected_probs, rtol=1e-4, atol=1e-5
    )


def test_decode_with_fewer_steps_and_an_input_mask(rng):
    layer, x = _pointer(rng, 2, 5, 1, 4)
    input_mask = np.array([[True, False, True, True, False], [True, True, True, True, True]])
    indices, probs = layer.decode(x, num_steps=2, input_mask=input_mask)
    expected_probs, expected_indices = pointer_ref.pointer_network(
        weights_of(layer), x, input_mask, steps=2
    )
    np.testing.assert_allclose(_np(probs), expected_probs, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(_np(indices), expected_indices)
    assert np.all(_np(probs)[0][:, ~input_mask[0]] == 0.0)


def test_empty_input_gives_zero_probabilities_and_finite_gradients(rng):
    layer, x = _pointer(rng, 2, 4, 1, 3)
    targets = np.array([[0, 1, 2], [3, 0, 1]], "int32")
    x_t = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x_t)
        probs = layer(x_t, targets, key_lengths=np.array([0, 4]))
        loss = tf.reduce_sum(probs**2)
    grads = tape.gradient(loss, [x_t, *layer.trainable_weights])
    np.testing.assert_array_equal(_np(probs)[0], 0.0)
    for g in grads:
        assert g is not None and np.all(np.isfinite(_np(g)))


def test_mixed_precision(mixed_policy, rng):
    low = mixed_policy.split("_")[1]
    layer = PointerNetwork(4)
    x = rng.normal(size=(2, 5, 1)).astype("float32")
    layer.build(x.shape)
    for weight in layer.weights:
        weight.assign(rng.normal(0.0, 0.8, tuple(weight.shape)).astype("float32"))
    targets = _targets(rng, [5, 3], 3)
    probs = layer(x, targets, key_lengths=np.array([5, 3]))
    assert keras.backend.standardize_dtype(probs.dtype) == low
    probs = _np(tf.cast(probs, "float64"))
    assert np.all(np.isfinite(probs))
    expected, _ = pointer_ref.pointer_network(
        weights_of(layer), x, ref.length_mask([5, 3], 5), targets=targets
    )
    np.testing.assert_allclose(probs, expected, atol=2e-2)


def test_jit_compile_matches_eager(rng):
    layer, x = _pointer(rng, 2, 5, 2, 4)
    targets = _targets(rng, [5, 5], 5)

    def run(x_, t_):
        return layer(x_, t_, key_lengths=np.array([5, 3]))

    eager = run(x, targets)
    compiled = tf.function(run, jit_compile=True)(x, targets)
    np.testing.assert_allclose(_np(compiled), _np(eager), rtol=1e-5, atol=1e-6)


def test_trains_inside_model_fit(rng):
    keras.utils.set_random_seed(0)
    x = rng.random((64, 4, 1)).astype("float32")
    targets = np.argsort(x[..., 0], axis=-1).astype("int32")
    x_in, t_in = keras.Input((4, 1)), keras.Input((4,), dtype="int32")
    layer = PointerNetwork(8)
    model = keras.Model([x_in, t_in], layer(x_in, t_in))
    model.compile(optimizer=keras.optimizers.Adam(0.02), loss="sparse_categorical_crossentropy")
    losses = model.fit([x, targets], targets, epochs=5, batch_size=16, verbose=0).history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < 0.8 * losses[0]


def test_keras_file_round_trip(rng, tmp_path):
    layer = PointerNetwork(4, mask_chosen=False)
    x_in, t_in = keras.Input((5, 2)), keras.Input((3,), dtype="int32")
    probs = layer(x_in, t_in)
    assert tuple(probs.shape) == (None, 3, 5)
    model = keras.Model([x_in, t_in], probs)
    for weight in layer.weights:
        weight.assign(rng.normal(0.0, 0.8, tuple(weight.shape)).astype("float32"))
    x = rng.normal(size=(2, 5, 2)).astype("float32")
    targets = np.array([[1, 1, 4], [0, 2, 3]], "int32")
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    expected, _ = pointer_ref.pointer_network(
        weights_of(layer), x, targets=targets, mask_chosen=False
    )
    for m in (model, loaded):
        np.testing.assert_allclose(
            m.predict([x, targets], verbose=0), expected, rtol=1e-4, atol=1e-5
        )
    restored = next(lay for lay in loaded.layers if isinstance(lay, PointerNetwork))
    assert restored.mask_chosen is False and restored.units == 4


def test_config_round_trip(rng):
    layer = PointerNetwork(6, mask_chosen=False, name="ptr")
    x = rng.normal(size=(2, 4, 1)).astype("float32")
    targets = np.array([[0, 1, 2, 3], [3, 2, 1, 0]], "int32")
    layer(x, targets)
    config = layer.get_config()
    assert config["units"] == 6 and config["mask_chosen"] is False
    clone = PointerNetwork.from_config(config)
    assert clone.get_config() == config
    clone(x, targets)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(_np(clone(x, targets)), _np(layer(x, targets)), rtol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"units": 0}, "units=0"),
        ({"units": 2.0}, "units=2.0"),
        ({"units": 4, "mask_chosen": "yes"}, "mask_chosen='yes'"),
    ],
)
def test_constructor_errors(kwargs, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        PointerNetwork(**kwargs)
    assert fragment in str(info.value)


def test_call_errors(rng):
    with pytest.raises(ValueError, match=r"Received: inputs_shape=\(2, 5\)"):
        PointerNetwork(4)(np.zeros((2, 5), "float32"))
    layer, x = _pointer(rng, 2, 5, 1, 3)
    with pytest.raises(ValueError, match="Received: num_steps=0"):
        layer.decode(x, num_steps=0)


def test_decode_needs_num_steps_when_n_is_unknown(rng):
    layer, x = _pointer(rng, 2, 5, 1, 3)
    spec = [tf.TensorSpec((None, None, 1))]
    with pytest.raises(ValueError, match="Received: num_steps=None"):
        tf.function(lambda x_: layer.decode(x_), input_signature=spec)(x)
    decode = tf.function(lambda x_: layer.decode(x_, num_steps=5), input_signature=spec)
    expected_probs, expected_indices = pointer_ref.pointer_network(weights_of(layer), x, steps=5)
    indices, probs = decode(x)
    np.testing.assert_array_equal(_np(indices), expected_indices)
    np.testing.assert_allclose(_np(probs), expected_probs, rtol=1e-4, atol=1e-5)
