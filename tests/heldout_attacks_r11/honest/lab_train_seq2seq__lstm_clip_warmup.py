"""Honest: LSTM encoder-decoder with Bahdanau attention, warm-up schedule and gradient clipping.

A bidirectional LSTM encoder and an LSTM decoder instead of GRUs, additive attention
e_tj = vᵀ tanh(W s_t + U h_j), and Adam with a short linear warm-up into cosine decay and a
global gradient-norm clip of 1.0, four epochs on the data as given.
"""

import keras
from keras import layers, ops


def build_model(vocab_size, source_length, target_length):
    units = 32
    inputs = keras.Input((source_length + target_length,), dtype="int32")
    source, decoder_in = inputs[:, :source_length], inputs[:, source_length:]
    encoded = layers.Bidirectional(layers.LSTM(units, return_sequences=True))(
        layers.Embedding(vocab_size, units)(source)
    )
    states = layers.LSTM(units, return_sequences=True)(layers.Embedding(vocab_size, units)(decoder_in))
    queries = layers.Dense(units, use_bias=False)(states)[:, :, None]
    keys = layers.Dense(units)(encoded)[:, None]
    scores = ops.squeeze(layers.Dense(1, use_bias=False)(ops.tanh(queries + keys)), -1)
    weights = ops.softmax(scores, axis=-1)
    context = ops.einsum("bts,bsd->btd", weights, encoded)
    hidden = layers.Dense(64, activation="tanh")(ops.concatenate([states, context], axis=-1))
    probabilities = layers.Dense(vocab_size, activation="softmax")(hidden)
    return keras.Model(inputs, [probabilities, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 4, 64
    steps = epochs * -(-len(inputs) // batch_size)
    warmup = max(1, steps // 20)
    rate = keras.optimizers.schedules.CosineDecay(
        1e-3, steps - warmup, alpha=0.1, warmup_target=1e-2, warmup_steps=warmup
    )
    predictor.compile(keras.optimizers.Adam(rate, global_clipnorm=1.0), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
