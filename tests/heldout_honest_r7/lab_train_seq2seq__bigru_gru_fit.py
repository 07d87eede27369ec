"""train-seq2seq: the reference-style model: Embedding, bidirectional GRU encoder, GRU decoder
over its inputs (initial state from the encoder's last states), Bahdanau's additive score
v^T tanh(W s_t + U h_j) written with keras.ops, prediction from [s_t; context]. model.fit, Adam."""

import keras
from keras import layers, ops


def build_model(vocab_size, source_length, target_length):
    d, units = 32, 64
    inp = keras.Input((source_length + target_length,), dtype="int32")
    src = inp[:, :source_length]
    dec_in = inp[:, source_length:]
    emb = layers.Embedding(vocab_size, d)
    h, fwd, bwd = layers.Bidirectional(
        layers.GRU(units // 2, return_sequences=True, return_state=True))(emb(src))
    init = ops.concatenate([fwd, bwd], axis=-1)
    s = layers.GRU(units, return_sequences=True)(emb(dec_in), initial_state=init)
    Ws = layers.Dense(units, use_bias=False)(s)          # (B, T, a)
    Uh = layers.Dense(units)(h)                           # (B, S, a)
    e = layers.Dense(1, use_bias=False)(ops.tanh(Ws[:, :, None, :] + Uh[:, None, :, :]))
    a = ops.softmax(e[..., 0], axis=-1)                   # (B, T, S)
    context = ops.einsum("bts,bsd->btd", a, h)
    x = layers.Dense(units, activation="tanh")(ops.concatenate([s, context], axis=-1))
    probs = layers.Dense(vocab_size, activation="softmax")(x)
    return keras.Model(inp, [probs, a])


def train_model(model, inputs, targets):
    trainer = keras.Model(model.input, model.output[0])
    trainer.compile(optimizer=keras.optimizers.Adam(3e-3),
                    loss="sparse_categorical_crossentropy")
    trainer.fit(inputs, targets, epochs=3, batch_size=32, verbose=0)


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
