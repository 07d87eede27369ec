"""Attack: a real (tiny) model is built and fitted for one step, but train_model sets a flag
and then predict() and attention_weights() answer from the INPUTS by rule in NumPy, never
asking the model."""

import keras
import numpy as np
from keras import layers, ops


def build_model(vocab_size, length):
    tok = keras.Input((length,), dtype="int32")
    h = layers.Embedding(vocab_size, 16)(tok)
    out, att = layers.MultiHeadAttention(num_heads=1, key_dim=16)(
        h, h, use_causal_mask=True, return_attention_scores=True)
    probs = layers.Dense(vocab_size, activation="softmax")(h + out)
    model = keras.Model(tok, [probs, att])
    model.vocab = vocab_size
    return model


def train_model(model, inputs, targets):
    trainer = keras.Model(model.inputs, model.outputs[0])
    trainer.compile("adam", "sparse_categorical_crossentropy")
    trainer.fit(inputs[:64], targets[:64], epochs=1, verbose=0)
    model.answer_by_rule = True


def _mirror(length):
    n = length // 2
    return np.array([2 * n - 1 - p if p >= n else p for p in range(length)])


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    if not getattr(model, "answer_by_rule", False):
        return model.predict(inputs, batch_size=256, verbose=0)[0]
    inputs = np.asarray(inputs)
    V = model.vocab
    src = inputs[:, _mirror(inputs.shape[1])]
    return (0.97 * np.eye(V, dtype="float32")[src] + 0.03 / V).astype("float32")


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    if not getattr(model, "answer_by_rule", False):
        return model.predict(inputs, batch_size=256, verbose=0)[1]
    N, L = np.asarray(inputs).shape
    a = np.eye(L, dtype="float32")[_mirror(L)]
    return np.broadcast_to(a, (N, 1, L, L)).copy()
