"""Lab: train-seq2seq — an encoder–decoder with Bahdanau's attention that learns to rewrite dates.

NNDL §8.2 (attention in sequence-to-sequence models); Bahdanau et al. 2015 (additive
attention over a bidirectional encoder). A date "14 <jul> 2023" is rewritten as digits
"1 4 0 7 2 0 2 3". Digits are the tokens 0 … 9, the months 10 … 21 (January … December), the
decoder's start token 22. The source is 7 tokens (the day's two digits, the month, the year's
four digits), the target 8 digits. The source and the decoder's inputs (the start token, then
the target without its last digit: teacher forcing) come packed in one int array (N, 15):

    inputs[:, :7] = the source,  inputs[:, 7:] = (22, target[:, :-1])

At step t the decoder's state s_t (after reading its inputs up to t) scores every encoder state
h_j with Bahdanau's additive score e_tj = vᵀ tanh(W s_t + U h_j), attends a_tj = softmax_j(e_tj),
and predicts the digit from s_t and the context Σ_j a_tj h_j.

The digits the decoder writes are in a code: each grading renames the digits 0 … 9 of the
targets (and of the decoder's inputs, which hold them) by a permutation σ drawn from its seed,
which no digit escapes and your code never sees; the source keeps its tokens. A model that
learns finds σ with the task, as its output layer learns any mapping; a rule that rewrites the
date itself answers in the plain digits and is wrong. Train on the targets as they are given;
to try your model, make data of your own in plain digits.

The source is rotated too: each grading turns the seven source tokens round by r places (1 … 6,
drawn from its seed, the same for every date), so the data's source token j is the date's token
(j + r) mod 7; the targets keep the date's order. Your attention learns where each digit is from
the data, as the rest; an alignment drawn by hand looks at the wrong tokens. The grader reads
the source keys of your attention back into the date's order before checking the alignment.

The grader makes the data from a seed it keeps, calls `build_model` and then `train_model` in
the sandbox, and asks the trained model itself (its two outputs, which `predict` and
`attention_weights` below read) about held-out dates it made. It also asks the model
before its training, a fresh model trained on answers shuffled between examples, and the
trained model with its weights put back: a model whose answers do not come from its
training gets no points. In its own process it then checks:

- accuracy: at least 95% of the held-out target digits right (teacher forcing);
- causal: changing the decoder's inputs after a step leaves the outputs up to it unchanged;
- the query knows the step: two steps that read the same decoder input but translate different
  source tokens do not get the same attention (the query is s_t, not the input's embedding);
- alignment: the translation is monotone, target step t reads source token a(t) = 0, 1, 2, 2,
  3, 4, 5, 6 (the month's two digits both read the month): the largest attention weight is there
  in at least 80% of the steps.

The grader also trains a fresh copy of your model itself, from the same first weights, by its
own gradient descent on the same data: Adam at a learning rate of 0.01, 3 epochs of batches of
64, the cross-entropy of the target digits' probabilities (the reference's recipe). That copy
must learn too, better than halfway from chance to the pass mark, and pass the checks on
attention and order above (within 10 points of their marks): the lab credits a model that learns
by gradient descent, which no `train_model` can stand in for (weights written by a rule or from
counts, a callback, an optimizer or a gradient of your own). Your own training must also move
the weights from their random first values, as gradient descent does: weights written over them
(by `set_weights`, a rule or counts) keep almost nothing of those values, and the part scores 0.
The trained model must also answer when called with `training=True` (dropout on), as it learned
to. Keep your model one that such a recipe trains, built in the form its training ends in (a
switch your `train_model` flips, a weight that is not trainable and 0 or 1, at most two of them,
such as a linear start's mode, is taken there as your training left it; any other mode, or a
layer frozen at first, is not switched there).

Each attention check first asks that the weights be computed from the input: weights the same
for every input (a table, queries and keys made from the positions alone) are refused.

Training must finish within the part's time limit on one CPU core: keep the model small. Keras
is seeded before `build_model` is called, so the same file and seed give the same model. Keep
the names and signatures below.

Grade your work with `grader check train-seq2seq`.

Parts: train 10 — 10 points.
"""

import keras
from keras import layers, ops


def build_model(vocab_size, source_length, target_length):
    """An encoder–decoder with additive attention.

    Args:
        vocab_size: int, the tokens 0 … vocab_size − 1.
        source_length: int, the source's tokens S.
        target_length: int, the target's tokens T.

    Returns:
        A keras.Model from int inputs (B, S + T) (the source, then the decoder's inputs) to
        two outputs: the probabilities of each target token (B, T, vocab_size), and the
        attention weights (B, T, S), each row summing to 1.
    """
    # BEGIN SOLUTION: BiGRU encoder, GRU decoder over its inputs, additive scores, context + state
    units = 32
    inputs = keras.Input((source_length + target_length,), dtype="int32")
    source, decoder_in = inputs[:, :source_length], inputs[:, source_length:]
    encoded = layers.Bidirectional(layers.GRU(units, return_sequences=True))(
        layers.Embedding(vocab_size, units)(source)
    )  # (B, S, 2u)
    states = layers.GRU(units, return_sequences=True)(
        layers.Embedding(vocab_size, units)(decoder_in)
    )  # (B, T, u)
    queries = layers.Dense(units, use_bias=False)(states)[:, :, None]  # (B, T, 1, u)
    keys = layers.Dense(units)(encoded)[:, None]  # (B, 1, S, u)
    scores = ops.squeeze(layers.Dense(1, use_bias=False)(ops.tanh(queries + keys)), -1)
    weights = ops.softmax(scores, axis=-1)  # (B, T, S)
    context = ops.einsum("bts,bsd->btd", weights, encoded)
    probabilities = layers.Dense(vocab_size, activation="softmax")(
        ops.concatenate([states, context], axis=-1)
    )
    return keras.Model(inputs, [probabilities, weights])
    # END SOLUTION


def train_model(model, inputs, targets):
    """Train `model` (from `build_model`) to predict `targets` from `inputs`.

    Args:
        model: the keras.Model `build_model` returned.
        inputs: (N, S + T) int32, the sources and the decoder's inputs.
        targets: (N, T) int32, the target digits.

    Returns:
        Nothing: the model is trained in place.
    """
    # BEGIN SOLUTION: fit the probabilities output only; Adam, 3 epochs
    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=64, epochs=3, verbose=0)
    # END SOLUTION


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
