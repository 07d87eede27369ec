"""Lab: train-memn2n — an end-to-end memory network that learns where each person is.

NNDL §8.5.1 (end-to-end memory networks); Sukhbaatar et al. 2015 (bAbI task 1, one supporting
fact, with the temporal encoding of its §4.1). A story is F facts "person is in place", people
moving from place to place; the question names a person of the story, and the answer is the
place of the latest fact about them: the supporting fact. Persons are the tokens 1 … P, places
P + 1 … P + Q, of one vocabulary (0 is never a fact's token). The story and the question come
packed in one int array of shape (N, F + 1, 2):

    inputs[:, i] = (person, place) of fact i, for i = 0 … F − 1 (oldest first)
    inputs[:, F] = (the person asked about, 0)

A memory network embeds each fact as a memory m_i (and an output c_i), the question as u,
attends p_i = softmax_i(u · m_i) and answers from o + u with o = Σ_i p_i c_i. Which fact is the
latest about a person depends on the order of the facts: the memories need a temporal encoding.

The answers are in a code: each grading renames the places by a permutation σ drawn from its
seed, which no place escapes and your code never sees, so a story's target is σ(place); the
stories keep their tokens. A model that learns finds σ with the task, as its output layer
learns any mapping; a rule that reads the place out of the story answers in the plain tokens
and is wrong. Train on the targets as they are given; to try your model, make data of your own
in plain tokens.

The facts are rotated too: each grading turns the F facts of a story round by r places
(1 … F − 1, drawn from its seed, the same for every story), so the data's fact j is the story's
fact (j + r) mod F and the latest fact is not the last row; the question stays last. A model's
temporal encoding learns that order from the data, as it learns the rest; a rule that takes the
last fact about the person is wrong. The grader reads your attention back into the story's order
before checking it.

The grader makes the data from a seed it keeps, calls `build_model` and then `train_model` in
the sandbox, and asks the trained model itself (its two outputs, which `predict` and
`attention_weights` below read) about held-out stories it made. It also asks the model
before its training, a fresh model trained on answers shuffled between examples, and the
trained model with its weights put back: a model whose answers do not come from its
training gets no points. In its own process it then checks:

- accuracy: at least 85% of the held-out answers right;
- the temporal encoding: with the facts of a story put in another order (the latest fact about
  the person asked now another one), the answer changes;
- attention on the supporting fact: the largest attention weight is on the supporting fact in
  at least 80% of the held-out stories (in one hop at least);
- the answer follows the fact: with the supporting fact's place changed, the answer changes
  with it in at least 80% of the stories.

The grader also trains a fresh copy of your model itself, from the same first weights, by its
own gradient descent on the same data: Adam at a learning rate of 0.01 with a cosine decay, 12
epochs of batches of 64, the cross-entropy of the answer's probabilities (the reference's
recipe). That copy must learn too, better than halfway from chance to the pass mark, and pass
the checks on attention and order above (within 10 points of their marks): the lab credits a
model that learns by gradient descent, which no `train_model` can stand in for (weights written
by a rule or from counts, a callback, an optimizer or a gradient of your own). Your own training
must also move the weights from their random first values, as gradient descent does: weights
written over them (by `set_weights`, a rule or counts) keep almost nothing of those values, and
the part scores 0. The trained model must also answer when called with `training=True` (dropout
on), as it learned to. Keep your model one that such a recipe trains, built in the form its
training ends in (a switch your `train_model` flips, a weight that is not trainable and 0 or 1,
at most two of them, such as a linear start's mode, is taken there as your training left it; any
other mode, or a layer frozen at first, is not switched there).

Each attention check first asks that the weights be computed from the input: weights the same
for every input (a table, queries and keys made from the positions alone) are refused.

Training must finish within the part's time limit on one CPU core: keep the model small. Keras
is seeded before `build_model` is called, so the same file and seed give the same model. Keep
the names and signatures below.

Grade your work with `grader check train-memn2n`.

Parts: train 10 — 10 points.
"""

import keras
from keras import layers, ops


def build_model(vocab_size, facts):
    """An end-to-end memory network for stories of `facts` facts.

    Args:
        vocab_size: int, persons and places are tokens 1 … vocab_size − 1.
        facts: int, the facts F of a story.

    Returns:
        A keras.Model from int inputs (B, F + 1, 2) (the facts, then the question) to two
        outputs: the probabilities of the answer (B, vocab_size), and the attention weights
        over the facts (B, F) (or (B, hops, F)), each row summing to 1.
    """
    # BEGIN SOLUTION: memories: sum of token embeddings + temporal encoding; one hop; dense(o + u)
    model_dim = 64
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    story, asked = inputs[:, :facts], inputs[:, facts, 0]
    # An Embedding called on a constant is computed once, when the model is built: its table is
    # a fixed random code of each fact's place in the story, never trained (enough to tell the
    # order); a layer of its own with add_weight would train it.
    order = ops.arange(facts)
    memories = ops.sum(layers.Embedding(vocab_size, model_dim)(story), axis=2)
    memories = memories + layers.Embedding(facts, model_dim)(order)[None]
    outputs = ops.sum(layers.Embedding(vocab_size, model_dim)(story), axis=2)
    outputs = outputs + layers.Embedding(facts, model_dim)(order)[None]
    question = layers.Embedding(vocab_size, model_dim)(asked)  # (B, d)
    weights = ops.softmax(ops.einsum("bfd,bd->bf", memories, question), axis=-1)
    read = ops.einsum("bf,bfd->bd", weights, outputs)
    probabilities = layers.Dense(vocab_size, activation="softmax")(read + question)
    return keras.Model(inputs, [probabilities, weights])
    # END SOLUTION


def train_model(model, inputs, targets):
    """Train `model` (from `build_model`) to answer `targets` from `inputs`.

    Args:
        model: the keras.Model `build_model` returned.
        inputs: (N, F + 1, 2) int32, the stories and questions.
        targets: (N,) int32, the answers (place tokens).

    Returns:
        Nothing: the model is trained in place.
    """
    # BEGIN SOLUTION: fit the probabilities output only; Adam, cosine decay, 12 epochs
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 12, 64
    steps = epochs * -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.CosineDecay(1e-2, steps, alpha=0.05)
    predictor.compile(keras.optimizers.Adam(rate), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=batch_size, epochs=epochs, verbose=0)
    # END SOLUTION


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
