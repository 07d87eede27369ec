"""Honest: a two-hop memory network (adjacent weight tying) trained with AdamW.

Two hops as in Sukhbaatar et al. (the output embedding of hop 1 is the memory embedding of hop
2), a learned temporal encoding per embedding, u_{k+1} = u_k + o_k, and both hops' attentions
returned (B, 2, F). AdamW with weight decay and a linear warm-up into cosine decay, 15 epochs,
on the data as given.
"""

import keras
from keras import layers, ops


class Temporal(layers.Layer):
    def build(self, input_shape):
        self.table = self.add_weight(
            (input_shape[1], input_shape[2]),
            initializer=keras.initializers.RandomNormal(0.0, 0.1),
            name="table",
        )

    def call(self, memories):
        return memories + self.table[None]


def build_model(vocab_size, facts):
    model_dim = 48
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    story, asked = inputs[:, :facts], inputs[:, facts, 0]
    embeddings = [layers.Embedding(vocab_size, model_dim) for _ in range(3)]
    tables = [Temporal() for _ in range(3)]
    encoded = [t(ops.sum(e(story), axis=2)) for e, t in zip(embeddings, tables)]
    question = layers.Embedding(vocab_size, model_dim)(asked)
    hops = []
    for hop in range(2):
        memories, outputs = encoded[hop], encoded[hop + 1]
        weights = ops.softmax(ops.einsum("bfd,bd->bf", memories, question), axis=-1)
        question = question + ops.einsum("bf,bfd->bd", weights, outputs)
        hops.append(weights)
    probabilities = layers.Dense(vocab_size, activation="softmax")(question)
    return keras.Model(inputs, [probabilities, ops.stack(hops, axis=1)])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 15, 64
    steps = epochs * -(-len(inputs) // batch_size)
    warmup = max(1, steps // 10)
    rate = keras.optimizers.schedules.CosineDecay(
        0.0, steps - warmup, alpha=0.05, warmup_target=1e-2, warmup_steps=warmup
    )
    predictor.compile(keras.optimizers.AdamW(rate, weight_decay=1e-4), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, 2, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
