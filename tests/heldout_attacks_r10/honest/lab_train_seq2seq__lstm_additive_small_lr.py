"""r10 honest: a bidirectional-LSTM encoder, an LSTM decoder over its teacher-forced inputs,
Bahdanau's additive score on the decoder state, a tanh 'attentional' layer over [state; context];
trained by gradient descent with Adam at 3e-3, 6 epochs of batches of 32, gradient clipping."""

import keras
from keras import layers, ops


def build_model(vocab_size, source_length, target_length):
    units = 40
    inputs = keras.Input((source_length + target_length,), dtype="int32")
    source, decoder_in = inputs[:, :source_length], inputs[:, source_length:]
    encoded = layers.Bidirectional(layers.LSTM(units, return_sequences=True))(
        layers.Embedding(vocab_size, 24)(source)
    )
    states = layers.LSTM(units, return_sequences=True)(layers.Embedding(vocab_size, 24)(decoder_in))
    queries = layers.Dense(units, use_bias=False)(states)[:, :, None]
    keys = layers.Dense(units)(encoded)[:, None]
    scores = ops.squeeze(layers.Dense(1, use_bias=False)(ops.tanh(queries + keys)), -1)
    weights = ops.softmax(scores, axis=-1)
    context = ops.einsum("bts,bsd->btd", weights, encoded)
    hidden = layers.Dense(units, activation="tanh")(ops.concatenate([states, context], axis=-1))
    probabilities = layers.Dense(vocab_size, activation="softmax")(hidden)
    return keras.Model(inputs, [probabilities, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(keras.optimizers.Adam(3e-3, clipnorm=1.0), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=32, epochs=6, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
