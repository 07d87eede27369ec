"""Lab: train-transformer — a small Transformer decoder that learns to reverse a sequence.

NNDL §8.3 (self-attention); Vaswani et al. 2017 (the decoder's masked self-attention, learned or
sinusoidal positions). Each sequence is a source of n tokens (1 … V − 1, repeats allowed), the
separator 0, then the source reversed:

    x_0 … x_{n−1}  0  x_{n−1} … x_0

The model reads the sequence without its last token (length L = 2n) and predicts, at every
position, the next token (teacher forcing). Only the answer positions p = n … 2n − 1 can be
predicted: the answer at p is the source token at position 2n − 1 − p. Your model must be a
decoder: its output at position p may depend on tokens 0 … p only (a causal mask).

The answers are in a code: each grading renames the answer tokens 1 … V − 1 by a permutation σ
drawn from its seed, which no token escapes and your code never sees, so the data answers
σ(x_{n−1}) … σ(x_0) (the answers so far in the inputs too); the source and the separator keep
their tokens. A model that learns finds σ with the task, as its output layer learns any
mapping; a rule that reverses the tokens itself answers in the plain tokens and is wrong. Train
on the targets as they are given; to try your model, make data of your own in plain tokens.

The source is rotated too: each grading also turns the n source positions round by r places
(1 … n − 1, drawn from its seed, the same for every sequence), so position j of the data holds
x_{(j+r) mod n}; the answers are those above. A model learns where to look from its data, as it
learns the rest; an attention drawn by hand on the anti-diagonal looks at the wrong tokens. The
grader reads the source keys of your attention back into the task's order before checking it.

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

The grader also trains a fresh copy of your model itself, from the same first weights, by its
own gradient descent on the same data: Adam at a learning rate of 0.01 with a cosine decay, 10
epochs of batches of 64, the cross-entropy of the probabilities at the answer positions (the
reference's recipe). That copy must learn too, better than halfway from chance to the pass mark,
and pass the checks on attention and order above (within 10 points of their marks): the lab
credits a model that learns by gradient descent, which no `train_model` can stand in for
(weights written by a rule or from counts, a callback, an optimizer or a gradient of your own).
Your own training must also move the weights from their random first values, as gradient descent
does: weights written over them (by `set_weights`, a rule or counts) keep almost nothing of
those values, and the part scores 0. The trained model must also answer when called with
`training=True` (dropout on), as it learned to. Keep your model one that such a recipe trains,
built in the form its training ends in (a switch your `train_model` flips, a weight that is not
trainable and 0 or 1, at most two of them, such as a linear start's mode, is taken there as your
training left it; any other mode, or a layer frozen at first, is not switched there).

Each attention check first asks that the weights be computed from the input: weights the same
for every input (a table, queries and keys made from the positions alone) are refused.

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
    # BEGIN SOLUTION: embeddings + learned positions, causal attention + residual, MLP, softmax
    model_dim = 64
    tokens = keras.Input((length,), dtype="int32")
    # Called on a constant, this Embedding is computed once, when the model is built: a fixed
    # random position table, never trained (enough to tell the positions apart).
    places = layers.Embedding(length, model_dim)(ops.arange(length))
    hidden = layers.Embedding(vocab_size, model_dim)(tokens) + places[None]
    attended, weights = layers.MultiHeadAttention(1, model_dim)(
        hidden, hidden, use_causal_mask=True, return_attention_scores=True
    )
    hidden = hidden + attended
    hidden = hidden + layers.Dense(model_dim)(
        layers.Dense(2 * model_dim, activation="relu")(hidden)
    )
    probabilities = layers.Dense(vocab_size, activation="softmax")(hidden)
    return keras.Model(tokens, [probabilities, weights])
    # END SOLUTION


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
    # BEGIN SOLUTION: fit probabilities, answer positions weighted; Adam, cosine decay, 10 epochs
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 10, 64
    steps = epochs * -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.CosineDecay(1e-2, steps, alpha=0.05)
    predictor.compile(keras.optimizers.Adam(rate), "sparse_categorical_crossentropy")
    length = inputs.shape[1]
    answer_positions = (np.arange(length) >= length // 2).astype("float32")
    weights = np.repeat(answer_positions[None], len(inputs), axis=0)
    predictor.fit(
        inputs, targets, sample_weight=weights, batch_size=batch_size, epochs=epochs, verbose=0
    )
    # END SOLUTION


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
