"""train-memn2n: two hops with adjacent weight tying (A_2 = C_1, final W = C_2^T), the
temporal encoding as a one-hot vector of the fact slot concatenated to each memory and mapped
by its own Dense per embedding; attention of both hops returned (B, 2, F). Trained with a
tf.GradientTape loop, RMSprop, learning rate halved every 4 epochs."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops


class TimeOneHot(layers.Layer):
    """Adds W_t onehot(i) to memory i (W_t a learned (F, d) matrix seen as a Dense layer)."""

    def __init__(self, facts, d, **kw):
        super().__init__(**kw)
        self.facts = facts
        self.proj = layers.Dense(d, use_bias=False)

    def call(self, mem):
        onehot = ops.eye(self.facts)                  # (F, F)
        return mem + self.proj(onehot)[None]


class TiedAnswer(layers.Layer):
    def __init__(self, emb, **kw):
        super().__init__(**kw)
        self.emb = emb

    def call(self, x):
        return ops.softmax(ops.matmul(x, ops.transpose(self.emb.embeddings)), axis=-1)


def build_model(vocab_size, facts):
    d, hops = 40, 2
    inp = keras.Input((facts + 1, 2), dtype="int32")
    story = inp[:, :facts]
    question = inp[:, facts, 0]
    embs = [layers.Embedding(vocab_size, d,
                             embeddings_initializer=keras.initializers.RandomNormal(stddev=0.1))
            for _ in range(hops + 1)]
    times = [TimeOneHot(facts, d) for _ in range(hops + 1)]
    u = embs[0](question)                              # B = A_1
    att = []
    for k in range(hops):
        m = times[k](ops.sum(embs[k](story), axis=2))      # A_k
        c = times[k + 1](ops.sum(embs[k + 1](story), axis=2))  # C_k = A_{k+1}
        p = ops.softmax(ops.einsum("bfd,bd->bf", m, u), axis=-1)
        u = u + ops.einsum("bf,bfd->bd", p, c)
        att.append(p)
    probs = TiedAnswer(embs[hops])(u)
    return keras.Model(inp, [probs, ops.stack(att, axis=1)])


def train_model(model, inputs, targets):
    epochs, batch = 12, 32
    n = len(inputs)
    spe = int(np.ceil(n / batch))
    sched = keras.optimizers.schedules.PiecewiseConstantDecay(
        [4 * spe, 8 * spe], [5e-3, 2.5e-3, 1.25e-3])
    opt = keras.optimizers.RMSprop(sched)
    loss_fn = keras.losses.SparseCategoricalCrossentropy()

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            probs, _ = model(x, training=True)
            loss = loss_fn(y, probs)
        grads = tape.gradient(loss, model.trainable_variables)
        grads, _ = tf.clip_by_global_norm(grads, 40.0)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    ds = tf.data.Dataset.from_tensor_slices((inputs.astype("int32"), targets.astype("int32")))
    ds = ds.shuffle(n, seed=1).batch(batch)
    for _ in range(epochs):
        for x, y in ds:
            step(x, y)


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, hops, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
