"""train-memn2n attempt."""

import keras
from keras import layers, ops


class MemoryHop(layers.Layer):
    def __init__(self, vocab_size, facts, dim=32, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.facts, self.dim = vocab_size, facts, dim

    def build(self, input_shape):
        init = keras.initializers.RandomNormal(stddev=0.1)
        v, f, d = self.vocab_size, self.facts, self.dim
        self.embed_a = self.add_weight(name="embed_a", shape=(v, d), initializer=init)
        self.embed_b = self.add_weight(name="embed_b", shape=(v, d), initializer=init)
        self.embed_c = self.add_weight(name="embed_c", shape=(v, d), initializer=init)
        self.time_a = self.add_weight(name="time_a", shape=(f, d), initializer=init)
        self.time_c = self.add_weight(name="time_c", shape=(f, d), initializer=init)

    def call(self, inputs):
        story = inputs[:, : self.facts]                    # (B, F, 2)
        asked = inputs[:, self.facts, 0]                   # (B,)
        memories = ops.sum(ops.take(self.embed_a, story, axis=0), axis=2)
        outputs = ops.sum(ops.take(self.embed_c, story, axis=0), axis=2)
        u = ops.take(self.embed_b, asked, axis=0)          # (B, d)
        scores = ops.einsum("bfd,bd->bf", memories, u)
        p = ops.softmax(scores, axis=-1)
        o = ops.einsum("bf,bfd->bd", p, outputs)
        return o + u, p


def build_model(vocab_size, facts):
    inputs = keras.Input(shape=(facts + 1, 2), dtype="int32")
    summary, attention = MemoryHop(vocab_size, facts)(inputs)
    probabilities = layers.Dense(vocab_size, activation="softmax")(summary)
    return keras.Model(inputs, [probabilities, attention])


def train_model(model, inputs, targets):
    answer_only = keras.Model(model.inputs, model.outputs[0])
    answer_only.compile(
        optimizer=keras.optimizers.Adam(1e-2), loss="sparse_categorical_crossentropy"
    )
    answer_only.fit(inputs, targets, batch_size=32, epochs=30, verbose=0)


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
