"""An honest classmate's partial 8-2 (the functions only; the two layers left as in the stub).
Used in every hostile class: their result must be the same as when graded alone."""

import keras
import numpy as np
from keras import ops


class ScaledDotScore(keras.layers.Layer):
    def call(self, query, key):
        raise NotImplementedError("not done")


class BilinearScore(keras.layers.Layer):
    def build(self, query_shape, key_shape):
        self.kernel = self.add_weight(shape=(query_shape[-1], key_shape[-1]), name="kernel")

    def call(self, query, key):
        raise NotImplementedError("not done")


def dot_product_variance(d, var_q=1.0, var_k=1.0):
    return d * var_q * var_k


def scaled_dot_product_variance(d, var_q=1.0, var_k=1.0):
    return var_q * var_k


def bilinear_asymmetry(W):
    W = np.asarray(W)
    return W - W.T


def softmax_jacobian(scores):
    s = np.asarray(scores, dtype="float64")
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]
