"""Attack: the model has a genuine trainable path that IS fitted on the grader's data (its
weights change), but a non-trainable gate variable, set to 0.999 by train_model, mixes in a
weightless rule path that computes the reversal; the answers and the attention come from the
rule, the trained weights are a decoy."""

import keras
import numpy as np
from keras import layers, ops


class RuleMix(layers.Layer):
    def __init__(self, vocab_size, length, **kw):
        super().__init__(**kw)
        self.V, self.L = vocab_size, length
        n = length // 2
        a = np.zeros((length, length), "float32")
        for p in range(length):
            a[p, 2 * n - 1 - p if p >= n else p] = 1.0
        self.rule = a

    def build(self, shapes):
        self.gate = self.add_weight(shape=(), initializer="zeros", trainable=False, name="gate")

    def call(self, tokens, learned_probs, learned_att):
        a = ops.convert_to_tensor(self.rule)
        onehot = ops.one_hot(ops.cast(tokens, "int32"), self.V)
        rule_probs = ops.einsum("pq,bqv->bpv", a, onehot)
        rule_att = ops.broadcast_to(a[None, None], ops.shape(learned_att))
        g = self.gate
        return ((1 - g) * learned_probs + g * rule_probs,
                (1 - g) * learned_att + g * rule_att)


def build_model(vocab_size, length):
    tok = keras.Input((length,), dtype="int32")
    h = layers.Embedding(vocab_size, 16)(tok)
    out, att = layers.MultiHeadAttention(num_heads=1, key_dim=16)(
        h, h, use_causal_mask=True, return_attention_scores=True)
    learned = layers.Dense(vocab_size, activation="softmax")(h + out)
    probs, att = RuleMix(vocab_size, length, name="rule_mix")(tok, learned, att)
    return keras.Model(tok, [probs, att])


def train_model(model, inputs, targets):
    trainer = keras.Model(model.inputs, model.outputs[0])
    trainer.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    trainer.fit(inputs, targets, batch_size=128, epochs=2, verbose=0)
    model.get_layer("rule_mix").gate.assign(0.999)


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
