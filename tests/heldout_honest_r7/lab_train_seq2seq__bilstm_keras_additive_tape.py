"""train-seq2seq: separate source and target embeddings, bidirectional LSTM encoder (summed
directions), LSTM decoder whose initial (h, c) are the encoder's final states projected, and
keras.layers.AdditiveAttention on projected queries W s_t and keys U h_j (its score is
v^T tanh(W s_t + U h_j), v the layer's learned scale), returning its scores. Trained with a
tf.GradientTape loop, Adam with inverse-time decay, 4 epochs."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops


def build_model(vocab_size, source_length, target_length):
    units = 48
    inp = keras.Input((source_length + target_length,), dtype="int32")
    src = inp[:, :source_length]
    dec_in = inp[:, source_length:]
    src_e = layers.Embedding(vocab_size, 24)(src)
    tgt_e = layers.Embedding(vocab_size, 24)(dec_in)
    h, fh, fc, bh, bc = layers.Bidirectional(
        layers.LSTM(units, return_sequences=True, return_state=True),
        merge_mode="sum")(src_e)
    h0 = layers.Dense(units, activation="tanh")(ops.concatenate([fh, bh], axis=-1))
    c0 = layers.Dense(units)(ops.concatenate([fc, bc], axis=-1))
    s = layers.LSTM(units, return_sequences=True)(tgt_e, initial_state=[h0, c0])
    q = layers.Dense(units, use_bias=False)(s)
    k = layers.Dense(units)(h)
    context, scores = layers.AdditiveAttention(use_scale=True)(
        [q, h, k], return_attention_scores=True)
    x = layers.Dense(64, activation="relu")(ops.concatenate([s, context], axis=-1))
    probs = layers.Dense(vocab_size, activation="softmax")(x)
    return keras.Model(inp, [probs, scores])


def train_model(model, inputs, targets):
    epochs, batch = 4, 32
    n = len(inputs)
    spe = int(np.ceil(n / batch))
    opt = keras.optimizers.Adam(
        keras.optimizers.schedules.InverseTimeDecay(4e-3, spe, 0.3))
    loss_fn = keras.losses.SparseCategoricalCrossentropy()
    x_all = tf.constant(inputs, tf.int32)
    y_all = tf.constant(targets, tf.int32)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            probs, _ = model(x, training=True)
            loss = loss_fn(y, probs)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    rng = np.random.default_rng(123)
    for _ in range(epochs):
        perm = rng.permutation(n)
        for i in range(spe):
            idx = perm[i * batch:(i + 1) * batch]
            step(tf.gather(x_all, idx), tf.gather(y_all, idx))


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
