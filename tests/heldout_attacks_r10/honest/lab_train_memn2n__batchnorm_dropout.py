"""r10 honest: the reference one-hop memory network with a BatchNormalization and a Dropout
before its output layer (ordinary regularisation a student may add); trained by gradient descent
with Adam (1e-2, cosine decay), 12 epochs of batches of 64, as the reference.  BatchNorm keeps
moving statistics in non-trainable weights updated during training calls: a relearning that
drops non-trainable updates (stateless) would evaluate it with the initial statistics."""

import keras
from keras import layers, ops


def build_model(vocab_size, facts):
    model_dim = 64
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    story, asked = inputs[:, :facts], inputs[:, facts, 0]
    order = ops.arange(facts)
    memories = ops.sum(layers.Embedding(vocab_size, model_dim)(story), axis=2)
    memories = memories + layers.Embedding(facts, model_dim)(order)[None]
    outputs = ops.sum(layers.Embedding(vocab_size, model_dim)(story), axis=2)
    outputs = outputs + layers.Embedding(facts, model_dim)(order)[None]
    question = layers.Embedding(vocab_size, model_dim)(asked)
    weights = ops.softmax(ops.einsum("bfd,bd->bf", memories, question), axis=-1)
    read = ops.einsum("bf,bfd->bd", weights, outputs)
    hidden = layers.Dropout(0.1)(layers.BatchNormalization()(read + question))
    probabilities = layers.Dense(vocab_size, activation="softmax")(hidden)
    return keras.Model(inputs, [probabilities, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 12, 64
    steps = epochs * -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.CosineDecay(1e-2, steps, alpha=0.05)
    predictor.compile(keras.optimizers.Adam(rate), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
