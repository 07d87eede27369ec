"""Honest (seq2seq): a bidirectional LSTM encoder and an LSTM decoder (instead of GRUs), the
additive score in its concatenated form e_tj = v^T tanh(W [s_t; h_j] + b) (one Dense on the
concatenation, equivalent to W s_t + U h_j), and an output MLP on [s_t; context]. Trained by
gradient descent on the grader's data with model.fit: RMSprop 5e-3, 6 epochs, batch 32."""
import keras
from keras import layers, ops


def build_model(vocab_size, source_length, target_length):
    units = 32
    inputs = keras.Input((source_length + target_length,), dtype="int32")
    source, decoder_in = inputs[:, :source_length], inputs[:, source_length:]
    encoded = layers.Bidirectional(layers.LSTM(units, return_sequences=True))(
        layers.Embedding(vocab_size, 24)(source))  # (B, S, 2u)
    states = layers.LSTM(units, return_sequences=True)(
        layers.Embedding(vocab_size, 24)(decoder_in))  # (B, T, u)
    S, T = source_length, target_length
    pairs = ops.concatenate([
        ops.repeat(states[:, :, None], S, axis=2),
        ops.repeat(encoded[:, None], T, axis=1)], axis=-1)  # (B, T, S, 3u)
    hidden = layers.Dense(units, activation="tanh")(pairs)
    scores = ops.squeeze(layers.Dense(1, use_bias=False)(hidden), -1)
    weights = ops.softmax(scores, axis=-1)
    context = ops.einsum("bts,bsd->btd", weights, encoded)
    mixed = layers.Dense(64, activation="relu")(ops.concatenate([states, context], axis=-1))
    probabilities = layers.Dense(vocab_size, activation="softmax")(mixed)
    return keras.Model(inputs, [probabilities, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(keras.optimizers.RMSprop(5e-3), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=32, epochs=6, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
