"""train-seq2seq attempt."""

import keras
from keras import layers, ops


def build_model(vocab_size, source_length, target_length):
    units, attn = 32, 32
    packed = keras.Input(shape=(source_length + target_length,), dtype="int32")
    source = packed[:, :source_length]
    decoder_inputs = packed[:, source_length:]

    encoded = layers.Bidirectional(layers.GRU(units, return_sequences=True))(
        layers.Embedding(vocab_size, 16)(source)
    )                                                         # (B, S, 2u): h_j
    states = layers.Bidirectional(layers.GRU(units, return_sequences=True))(
        layers.Embedding(vocab_size, 16)(decoder_inputs)
    )                                                         # (B, T, 2u): s_t, left to right

    query = layers.Dense(attn, use_bias=False)(states)        # W s_t
    key = layers.Dense(attn)(encoded)                         # U h_j (+ bias)
    context, weights = layers.AdditiveAttention(use_scale=True)(
        [query, encoded, key], return_attention_scores=True
    )                                                         # softmax_j vᵀ tanh(W s_t + U h_j)
    mixed = layers.Dense(64, activation="tanh")(layers.Concatenate()([states, context]))
    probabilities = layers.Dense(vocab_size, activation="softmax")(mixed)
    return keras.Model(packed, [probabilities, weights])


def train_model(model, inputs, targets):
    digits = keras.Model(model.inputs, model.outputs[0])
    digits.compile(optimizer=keras.optimizers.Adam(5e-3), loss="sparse_categorical_crossentropy")
    digits.fit(inputs, targets, batch_size=32, epochs=15, verbose=0)


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
