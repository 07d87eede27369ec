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

The grader makes the data from a seed it keeps, calls `build_model` and then `train_model` in
the sandbox, and asks the trained model itself (its two outputs, which `predict` and
`attention_weights` below read) about held-out stories it made. It also asks the model
before its training, a fresh model trained on answers shuffled between examples, and the
trained model with its weights put back: a model whose answers do not come from its
training gets no points. In its own process it then checks:

- accuracy: at least 90% of the held-out answers right;
- the temporal encoding: with the facts of a story put in another order (the latest fact about
  the person asked now another one), the answer changes;
- attention on the supporting fact: the largest attention weight is on the supporting fact in
  at least 80% of the held-out stories (in one hop at least);
- the answer follows the fact: with the supporting fact's place changed, the answer changes
  with it in at least 80% of the stories.

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
    # Two hops with adjacent weight tying (Sukhbaatar et al. 2015, 2.2):
    # A^{k+1} = C^k, B = A^1, and temporal encodings T_A, T_C tied the same way.
    d = 48
    hops = 2
    inp = keras.Input(shape=(facts + 1, 2), dtype="int32")
    story = inp[:, :facts, :]          # (B, F, 2)
    q_tok = inp[:, facts, 0]           # (B,)
    emb = [layers.Embedding(vocab_size, d) for _ in range(hops + 1)]
    time_emb = [layers.Embedding(facts, d) for _ in range(hops + 1)]
    t = ops.arange(facts)

    def memories(k):
        bag = ops.sum(emb[k](story), axis=2)            # bag of words of each fact
        return bag + ops.expand_dims(time_emb[k](t), 0)  # + temporal encoding

    u = emb[0](q_tok)
    all_p = []
    for k in range(hops):
        m, c = memories(k), memories(k + 1)
        p = ops.softmax(ops.sum(m * ops.expand_dims(u, 1), axis=-1), axis=1)   # (B, F)
        o = ops.sum(ops.expand_dims(p, -1) * c, axis=1)
        u = u + o
        all_p.append(p)
    answer = layers.Dense(vocab_size, activation="softmax")(u)
    att = ops.stack(all_p, axis=1)      # (B, hops, F)
    return keras.Model(inp, [answer, att])


def train_model(model, inputs, targets):
    """Train `model` (from `build_model`) to answer `targets` from `inputs`.

    Args:
        model: the keras.Model `build_model` returned.
        inputs: (N, F + 1, 2) int32, the stories and questions.
        targets: (N,) int32, the answers (place tokens).

    Returns:
        Nothing: the model is trained in place.
    """
    answer_model = keras.Model(model.inputs, model.outputs[0])
    n_epochs = 20
    decay = keras.optimizers.schedules.ExponentialDecay(1e-2, decay_steps=len(inputs) // 50, decay_rate=0.8)
    answer_model.compile(optimizer=keras.optimizers.Adam(learning_rate=decay),
                         loss=keras.losses.SparseCategoricalCrossentropy(),
                         metrics=["accuracy"])
    answer_model.fit(inputs, targets, epochs=n_epochs, batch_size=50, verbose=0)


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
