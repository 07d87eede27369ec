"""Lab: train-transformer — a small Transformer decoder that learns to reverse a sequence.

NNDL §8.3 (self-attention); Vaswani et al. 2017 (the decoder's masked self-attention, learned or
sinusoidal positions). Each sequence is a source of n tokens (1 … V − 1, repeats allowed), the
separator 0, then the source reversed:

    x_0 … x_{n−1}  0  x_{n−1} … x_0

The model reads the sequence without its last token (length L = 2n) and predicts, at every
position, the next token (teacher forcing). Only the answer positions p = n … 2n − 1 can be
predicted: the answer at p is the source token at position 2n − 1 − p. Your model must be a
decoder: its output at position p may depend on tokens 0 … p only (a causal mask).

The grader makes the data from a seed it keeps, calls `build_model` and then `train_model` in
the sandbox, and asks the trained model itself (its two outputs, which `predict` and
`attention_weights` below read) about held-out sequences it made. It also asks the model
before its training, a fresh model trained on answers shuffled between examples, and the
trained model with its weights put back: a model whose answers do not come from its
training gets no points. In its own process it then checks:

- accuracy: at least 95% of the held-out answer tokens right;
- causal: changing tokens after a position leaves every output up to it unchanged;
- uses positions: when the source is put in another order, the first answer (the last source
  token) follows; self-attention alone sees a set, not an order (NNDL §8.3);
- attention is anti-diagonal: at answer position p, the largest attention weight is on the
  mirrored source token, key 2n − 1 − p (in at least one head).

Training must finish within the part's time limit, 150 s, on one CPU core: keep the model
small. Keras is seeded before `build_model` is called, so the same file and seed give the same
model. Keep the names and signatures below; `predict` and `attention_weights` expect the
model's two outputs as `build_model` documents.

Grade your work with `grader check train-transformer`.

Parts: train 10 — 10 points.
"""

import keras
import numpy as np
from keras import layers, ops
import tensorflow as tf


def sinusoid_table(length, dim):
    """The sinusoidal position encoding of Vaswani et al. (NNDL 8.3), (length, dim)."""
    pos = np.arange(length)[:, None]
    i = np.arange(dim // 2)[None, :]
    angle = pos / np.power(10000.0, 2 * i / dim)
    table = np.zeros((length, dim), dtype="float32")
    table[:, 0::2] = np.sin(angle)
    table[:, 1::2] = np.cos(angle)
    return table


class CausalSelfAttention(layers.Layer):
    """One head of masked self-attention: softmax(QK^T / sqrt(d) + mask) V."""

    def __init__(self, dim, **kwargs):
        super().__init__(**kwargs)
        self.dim = dim
        self.q = layers.Dense(dim, use_bias=False)
        self.k = layers.Dense(dim, use_bias=False)
        self.v = layers.Dense(dim, use_bias=False)
        self.o = layers.Dense(dim)

    def call(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        scores = ops.matmul(q, ops.transpose(k, (0, 2, 1))) / np.sqrt(self.dim)
        t = ops.shape(x)[1]
        allowed = ops.tril(ops.ones((t, t), dtype="bool"))
        scores = ops.where(allowed[None], scores, -1e9)
        weights = ops.softmax(scores, axis=-1)
        return self.o(ops.matmul(weights, v)), weights


def build_model(vocab_size, length):
    """A Transformer decoder for sequences of `length` tokens of a vocabulary of `vocab_size`.

    Args:
        vocab_size: int, tokens are 0 … vocab_size − 1 (0 is the separator).
        length: int, the number of positions L the model reads (2n).

    Returns:
        A keras.Model from int tokens (B, L) to two outputs: the probabilities of the next
        token (B, L, vocab_size), and the weights of its self-attention (B, H, L, L) (or
        (B, L, L)), causal (zero above the diagonal), each row summing to 1.
    """
    dim = 64
    tokens = keras.Input((length,), dtype="int32")
    x = layers.Embedding(vocab_size, dim)(tokens)
    x = x + ops.convert_to_tensor(sinusoid_table(length, dim))[None]
    att, weights = CausalSelfAttention(dim)(x)
    x = x + att
    h = layers.Dense(4 * dim, activation="gelu")(x)
    x = x + layers.Dense(dim)(h)
    probs = layers.Dense(vocab_size, activation="softmax")(x)
    return keras.Model(tokens, [probs, weights])


def train_model(model, inputs, targets):
    """Train `model` (from `build_model`) to predict `targets` from `inputs`.

    Args:
        model: the keras.Model `build_model` returned.
        inputs: (N, L) int32, the training sequences without their last token.
        targets: (N, L) int32, the next token at each position (`inputs` shifted by one). The
            targets at the source positions 0 … n − 1 are random: no model can learn them.

    Returns:
        Nothing: the model is trained in place.
    """
    # my own loop: cross-entropy only on the answer positions (second half)
    n_epochs, batch = 12, 64
    length = inputs.shape[1]
    mask = tf.constant((np.arange(length) >= length // 2).astype("float32"))
    n_steps = n_epochs * int(np.ceil(len(inputs) / batch))
    schedule = keras.optimizers.schedules.CosineDecay(5e-3, n_steps, alpha=0.1)
    opt = keras.optimizers.Adam(schedule)
    ce = keras.losses.SparseCategoricalCrossentropy(reduction=None)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            probs, _ = model(x, training=True)
            per_token = ce(y, probs) * mask
            loss = tf.reduce_sum(per_token) / (tf.reduce_sum(mask) * tf.cast(tf.shape(x)[0], "float32"))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    rng = np.random.default_rng(0)
    for epoch in range(n_epochs):
        order = rng.permutation(len(inputs))
        for s in range(0, len(inputs), batch):
            idx = order[s:s + batch]
            step(tf.constant(inputs[idx]), tf.constant(targets[idx]))


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
