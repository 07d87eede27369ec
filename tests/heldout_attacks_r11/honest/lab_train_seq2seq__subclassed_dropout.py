"""Honest: a subclassed encoder-decoder with dropout and a custom training loop.

The same Bahdanau network written as a keras.Model subclass (its call returns the probabilities
and the attention), with dropout on the decoder's states and the context during training, and a
hand-written tf.GradientTape loop: Adam at 1e-2, batches of 64, three epochs over shuffled data.
"""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops


class DateTranslator(keras.Model):
    def __init__(self, vocab_size, source_length, units=32, **kwargs):
        super().__init__(**kwargs)
        self.source_length = source_length
        self.source_embedding = layers.Embedding(vocab_size, units)
        self.target_embedding = layers.Embedding(vocab_size, units)
        self.encoder = layers.Bidirectional(layers.GRU(units, return_sequences=True))
        self.decoder = layers.GRU(units, return_sequences=True)
        self.query = layers.Dense(units, use_bias=False)
        self.key = layers.Dense(units)
        self.score = layers.Dense(1, use_bias=False)
        self.dropout = layers.Dropout(0.1)
        self.out = layers.Dense(vocab_size, activation="softmax")

    def call(self, inputs, training=False):
        source, decoder_in = inputs[:, : self.source_length], inputs[:, self.source_length :]
        encoded = self.encoder(self.source_embedding(source))
        states = self.decoder(self.target_embedding(decoder_in))
        scores = self.score(ops.tanh(self.query(states)[:, :, None] + self.key(encoded)[:, None]))
        weights = ops.softmax(ops.squeeze(scores, -1), axis=-1)
        context = ops.einsum("bts,bsd->btd", weights, encoded)
        features = self.dropout(ops.concatenate([states, context], axis=-1), training=training)
        return self.out(features), weights


def build_model(vocab_size, source_length, target_length):
    model = DateTranslator(vocab_size, source_length)
    model(np.zeros((1, source_length + target_length), "int32"))
    return model


def train_model(model, inputs, targets):
    optimizer = keras.optimizers.Adam(1e-2)
    loss_fn = keras.losses.SparseCategoricalCrossentropy()
    rng = np.random.default_rng(0)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            probabilities, _ = model(x, training=True)
            loss = loss_fn(y, probabilities)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for _ in range(3):
        order = rng.permutation(len(inputs))
        for start in range(0, len(inputs), 64):
            batch = order[start : start + 64]
            step(tf.constant(inputs[batch]), tf.constant(targets[batch]))


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
