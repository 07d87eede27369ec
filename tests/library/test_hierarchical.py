"""HierarchicalAttention against a float64 NumPy hierarchical attention network (Yang 2016)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attnkit.hierarchical import HierarchicalAttention
from grader.reference import attention as ref
from grader.reference import recurrent as recurrent_ref
from grader.reference import structured as structured_ref


def _np(x):
    return keras.ops.convert_to_numpy(x)


def weights_of(layer):
    return {
        "word_fw": recurrent_ref.cell_weights(layer.word_encoder.forward_layer.cell),
        "word_bw": recurrent_ref.cell_weights(layer.word_encoder.backward_layer.cell),
        "sentence_fw": recurrent_ref.cell_weights(layer.sentence_encoder.forward_layer.cell),
        "sentence_bw": recurrent_ref.cell_weights(layer.sentence_encoder.backward_layer.cell),
        "word_kernel": ref.as64(layer.word_projection.kernel.numpy()),
        "word_bias": ref.as64(layer.word_projection.bias.numpy()),
        "word_context": ref.as64(layer.word_context.numpy()),
        "sentence_kernel": ref.as64(layer.sentence_projection.kernel.numpy()),
        "sentence_bias": ref.as64(layer.sentence_projection.bias.numpy()),
        "sentence_context": ref.as64(layer.sentence_context.numpy()),
    }


def randomize(layer, rng):
    for weight in layer.weights:
        weight.assign(rng.normal(0.0, 0.7, tuple(weight.shape)).astype(weight.dtype))


def padded_ids(rng, b, s, w, vocab):
    """Token ids with right-padded words and sentences; document 1 (if any) is empty."""
    ids = np.zeros((b, s, w), "int32")
    for d in range(b):
        sentences = 0 if d == 1 else rng.integers(1, s + 1)
        for i in range(sentences):
            n = rng.integers(1, w + 1)
            ids[d, i, :n] = rng.integers(1, vocab, n)
    return ids


# (batch, sentences, words, units, embedding_dim, attention_units)
SHAPES = [(1, 1, 1, 2, 3, None), (3, 3, 4, 3, 4, None), (3, 2, 5, 2, 3, 4)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s[:5])))
def test_token_ids_match_numpy(shape, rng):
    b, s, w, units, emb, att = shape
    layer = HierarchicalAttention(units, vocab_size=11, embedding_dim=emb, attention_units=att)
    ids = padded_ids(rng, b, s, w, 11)
    layer.build(ids.shape)
    randomize(layer, rng)
    document, word_weights, sentence_weights = layer(ids, return_attention_scores=True)
    x = ref.as64(layer.embedding.embeddings.numpy())[ids]
    expected = structured_ref.hierarchical(weights_of(layer), x, ids != 0)
    np.testing.assert_allclose(_np(word_weights), expected[1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(sentence_weights), expected[2], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(document), expected[0], rtol=1e-4, atol=1e-5)
    assert np.all(_np(word_weights)[ids == 0] == 0.0)
    np.testing.assert_allclose(_np(layer(ids)), expected[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("with_mask", [True, False], ids=["mask", "no_mask"])
def test_embeddings_match_numpy(with_mask, rng):
    layer = HierarchicalAttention(3)
    x = rng.normal(size=(2, 3, 4, 5)).astype("float32")
    layer.build(x.shape)
    randomize(layer, rng)
    keep = padded_ids(rng, 2, 3, 4, 5) != 0 if with_mask else np.ones((2, 3, 4), bool)
    kwargs = {"mask": keep} if with_mask else {}
    document, word_weights, sentence_weights = layer(x, return_attention_scores=True, **kwargs)
    expected = structured_ref.hierarchical(weights_of(layer), x, keep)
    np.testing.assert_allclose(_np(word_weights), expected[1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(sentence_weights), expected[2], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(document), expected[0], rtol=1e-4, atol=1e-5)


def test_takes_the_keras_mask_of_embeddings(rng):
    ids = padded_ids(rng, 3, 3, 4, 9)
    embedded = keras.layers.Embedding(9, 4, mask_zero=True)(ids)
    layer = HierarchicalAttention(3)
    layer.build(embedded.shape)
    randomize(layer, rng)
    _, word_weights, sentence_weights = layer(embedded, return_attention_scores=True)
    expected = structured_ref.hierarchical(weights_of(layer), _np(embedded), ids != 0)
    np.testing.assert_allclose(_np(word_weights), expected[1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(sentence_weights), expected[2], rtol=1e-4, atol=1e-5)


def test_empty_document_gives_zeros_and_finite_gradients(rng):
    layer = HierarchicalAttention(3)
    x = tf.constant(rng.normal(size=(2, 2, 3, 4)).astype("float32"))
    mask = np.array([[[False] * 3] * 2, [[True, True, False], [True, False, False]]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        document, word_weights, sentence_weights = layer(x, mask=mask, return_attention_scores=True)
        loss = tf.reduce_sum(document**2)
    grads = tape.gradient(loss, [x, *layer.trainable_weights])
    np.testing.assert_array_equal(_np(document)[0], 0.0)
    np.testing.assert_array_equal(_np(word_weights)[0], 0.0)
    np.testing.assert_array_equal(_np(sentence_weights)[0], 0.0)
    for g in grads:
        assert g is not None and np.all(np.isfinite(_np(g)))
    np.testing.assert_array_equal(_np(grads[0])[0], 0.0)
    expected = structured_ref.hierarchical(weights_of(layer), _np(x), mask)
    np.testing.assert_allclose(_np(document), expected[0], rtol=1e-4, atol=1e-5)


def test_mixed_precision(mixed_policy, rng):
    low = mixed_policy.split("_")[1]
    layer = HierarchicalAttention(3, vocab_size=9, embedding_dim=4)
    ids = padded_ids(rng, 3, 2, 4, 9)
    layer.build(ids.shape)
    randomize(layer, rng)
    document, word_weights, _ = layer(ids, return_attention_scores=True)
    assert keras.backend.standardize_dtype(document.dtype) == low
    document = _np(tf.cast(document, "float64"))
    word_weights = _np(tf.cast(word_weights, "float64"))
    assert np.all(np.isfinite(document)) and np.all(np.isfinite(word_weights))
    x = ref.as64(layer.embedding.embeddings.numpy())[ids]
    expected = structured_ref.hierarchical(weights_of(layer), x, ids != 0)
    np.testing.assert_allclose(word_weights, expected[1], atol=2e-2)
    np.testing.assert_allclose(document, expected[0], atol=3e-2)


@pytest.mark.parametrize("inputs", ["token_ids", "embeddings_and_mask"])
def test_jit_compile_matches_eager(inputs, rng):
    ids = padded_ids(rng, 3, 3, 4, 9)  # padded words and sentences; document 1 is empty
    keep = ids != 0
    if inputs == "token_ids":
        layer = HierarchicalAttention(3, vocab_size=9, embedding_dim=4, attention_units=5)
        x, mask = ids, None
    else:
        layer = HierarchicalAttention(3, attention_units=5)
        x, mask = rng.normal(size=(3, 3, 4, 4)).astype("float32"), keep
    layer.build(x.shape)
    randomize(layer, rng)

    def run(x_, m_):
        return layer(x_, mask=m_, return_attention_scores=True)

    eager = run(x, mask)
    compiled = tf.function(run, jit_compile=True)(x, mask)
    for e, c in zip(eager, compiled, strict=True):
        assert np.all(np.isfinite(_np(c)))
        np.testing.assert_allclose(_np(c), _np(e), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(_np(compiled[1])[~keep], 0.0)
    np.testing.assert_array_equal(_np(compiled[0])[1], 0.0)
    if layer.embedding is not None:
        x = ref.as64(layer.embedding.embeddings.numpy())[ids]
    expected = structured_ref.hierarchical(weights_of(layer), x, keep)
    for c, e in zip(compiled, expected, strict=True):
        np.testing.assert_allclose(_np(c), e, rtol=1e-4, atol=1e-5)


def test_trains_inside_model_fit(rng):
    # Label: does token 1 occur in the document?
    keras.utils.set_random_seed(0)
    ids = rng.integers(2, 8, (64, 3, 4)).astype("int32")
    labels = rng.random(64) < 0.5
    for d in np.flatnonzero(labels):
        ids[d, rng.integers(3), rng.integers(4)] = 1
    inputs = keras.Input((3, 4), dtype="int32")
    document = HierarchicalAttention(4, vocab_size=8, embedding_dim=4)(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(document))
    model.compile(optimizer=keras.optimizers.Adam(0.02), loss="binary_crossentropy")
    history = model.fit(ids, labels.astype("float32"), epochs=8, batch_size=16, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < 0.8 * losses[0]


def test_keras_file_round_trip(rng, tmp_path):
    layer = HierarchicalAttention(3, vocab_size=9, embedding_dim=4, attention_units=5)
    inputs = keras.Input((2, 4), dtype="int32")
    outputs = layer(inputs, return_attention_scores=True)
    assert [tuple(t.shape) for t in outputs] == [(None, 6), (None, 2, 4), (None, 2)]
    model = keras.Model(inputs, outputs)
    randomize(layer, rng)
    ids = padded_ids(rng, 3, 2, 4, 9)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    x = ref.as64(layer.embedding.embeddings.numpy())[ids]
    expected = structured_ref.hierarchical(weights_of(layer), x, ids != 0)
    for m in (model, loaded):
        for g, e in zip(m.predict(ids, verbose=0), expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_config_round_trip(rng):
    layer = HierarchicalAttention(
        3, vocab_size=9, embedding_dim=4, attention_units=5, context_initializer="ones", name="han"
    )
    ids = padded_ids(rng, 2, 2, 3, 9)
    layer(ids)
    config = layer.get_config()
    assert {k: config[k] for k in ("units", "vocab_size", "embedding_dim", "attention_units")} == {
        "units": 3,
        "vocab_size": 9,
        "embedding_dim": 4,
        "attention_units": 5,
    }
    clone = HierarchicalAttention.from_config(config)
    assert clone.get_config() == config
    clone(ids)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(_np(clone(ids)), _np(layer(ids)), rtol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"units": 0}, "units=0"),
        ({"units": 3, "vocab_size": 0, "embedding_dim": 2}, "vocab_size=0"),
        ({"units": 3, "vocab_size": 9}, "embedding_dim=None"),
        ({"units": 3, "embedding_dim": 4}, "embedding_dim=4"),
        ({"units": 3, "vocab_size": 9, "embedding_dim": -2}, "embedding_dim=-2"),
        ({"units": 3, "attention_units": 0}, "attention_units=0"),
        ({"units": 3, "context_initializer": 42}, "context_initializer=42"),
    ],
)
def test_constructor_errors(kwargs, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        HierarchicalAttention(**kwargs)
    assert fragment in str(info.value)


def test_call_errors():
    with pytest.raises(ValueError, match=r"Received: inputs_shape=\(2, 3, 4, 5\)"):
        HierarchicalAttention(3, vocab_size=9, embedding_dim=4)(np.zeros((2, 3, 4, 5), "int32"))
    with pytest.raises(ValueError, match=r"Received: inputs_shape=\(2, 3, 4\)"):
        HierarchicalAttention(3)(np.zeros((2, 3, 4), "float32"))
