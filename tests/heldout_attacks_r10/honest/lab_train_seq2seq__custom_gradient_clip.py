"""r10 honest: the reference encoder-decoder with one addition: the context vector passes through
an identity whose gradient is clipped elementwise to [-1, 1] (a tf.custom_gradient, a common way
to keep an attention model's early steps stable).  The forward pass is exactly the reference's;
the gradient is the true gradient wherever it is small.  Trained by gradient descent: Adam 1e-2,
3 epochs of batches of 64."""

import keras
import tensorflow as tf
from keras import layers, ops


@tf.custom_gradient
def _clip_grad(x):
    def grad(dy):
        return tf.clip_by_value(dy, -1.0, 1.0)

    return tf.identity(x), grad


class _ClipGrad(layers.Layer):
    def call(self, x):
        return _clip_grad(x)


def build_model(vocab_size, source_length, target_length):
    units = 32
    inputs = keras.Input((source_length + target_length,), dtype="int32")
    source, decoder_in = inputs[:, :source_length], inputs[:, source_length:]
    encoded = layers.Bidirectional(layers.GRU(units, return_sequences=True))(
        layers.Embedding(vocab_size, units)(source)
    )
    states = layers.GRU(units, return_sequences=True)(layers.Embedding(vocab_size, units)(decoder_in))
    queries = layers.Dense(units, use_bias=False)(states)[:, :, None]
    keys = layers.Dense(units)(encoded)[:, None]
    scores = ops.squeeze(layers.Dense(1, use_bias=False)(ops.tanh(queries + keys)), -1)
    weights = ops.softmax(scores, axis=-1)
    context = _ClipGrad()(ops.einsum("bts,bsd->btd", weights, encoded))
    probabilities = layers.Dense(vocab_size, activation="softmax")(ops.concatenate([states, context], axis=-1))
    return keras.Model(inputs, [probabilities, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=64, epochs=3, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
