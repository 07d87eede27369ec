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
from keras import layers


def sinusoidal_positions(length, model_dim):
    """Vaswani et al.'s fixed encoding: sin on even features, cos on odd ones."""
    position = np.arange(length)[:, None]
    rates = 1.0 / 10000 ** (np.arange(0, model_dim, 2) / model_dim)
    angles = position * rates[None, :]
    encoding = np.zeros((length, model_dim), "float32")
    encoding[:, 0::2] = np.sin(angles)
    encoding[:, 1::2] = np.cos(angles)
    return encoding


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
    model_dim, heads = 64, 2
    tokens = keras.Input((length,), dtype="int32")
    embedded = layers.Embedding(vocab_size, model_dim)(tokens)
    x = embedded * np.sqrt(model_dim).astype("float32") + sinusoidal_positions(length, model_dim)
    attention = layers.MultiHeadAttention(num_heads=heads, key_dim=model_dim // heads)
    attended, weights = attention(
        x, x, use_causal_mask=True, return_attention_scores=True
    )  # weights (B, 2, L, L)
    x = x + attended
    feed_forward = layers.Dense(2 * model_dim, activation="relu")(x)
    x = x + layers.Dense(model_dim)(feed_forward)
    probabilities = layers.Dense(vocab_size, activation="softmax")(x)
    return keras.Model(tokens, [probabilities, weights])


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
    # train on the probabilities only; the second output has no target
    next_token = keras.Model(model.input, model.output[0])
    epochs, batch_size = 10, 64
    total_steps = epochs * int(np.ceil(len(inputs) / batch_size))
    schedule = keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=1e-2, decay_steps=total_steps, alpha=0.05
    )
    next_token.compile(
        optimizer=keras.optimizers.Adam(learning_rate=schedule),
        loss=keras.losses.SparseCategoricalCrossentropy(),
    )
    # the first half of the targets is random: give it no weight
    half = inputs.shape[1] // 2
    mask = np.zeros(inputs.shape, "float32")
    mask[:, half:] = 1.0
    next_token.fit(
        inputs, targets, sample_weight=mask, batch_size=batch_size, epochs=epochs,
        shuffle=True, verbose=0,
    )


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
