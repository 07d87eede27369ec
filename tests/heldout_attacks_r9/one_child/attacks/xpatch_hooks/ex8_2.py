"""Exercise 8-2, WRONG on purpose: every answer is zeros (graded alone it scores 0)."""

import keras
from keras import ops
import numpy as np

_r9_wrong = True


class ScaledDotScore(keras.layers.Layer):
    def call(self, query, key):
        return ops.zeros((ops.shape(query)[0], ops.shape(query)[1], ops.shape(key)[1]), dtype=query.dtype)


class BilinearScore(keras.layers.Layer):
    def build(self, query_shape, key_shape):
        self.kernel = self.add_weight(name="kernel", shape=(query_shape[-1], key_shape[-1]))

    def call(self, query, key):
        return ops.zeros((ops.shape(query)[0], ops.shape(query)[1], ops.shape(key)[1]), dtype=query.dtype)


def dot_product_variance(d, var_q=1.0, var_k=1.0):
    return 0.0


def scaled_dot_product_variance(d, var_q=1.0, var_k=1.0):
    return 0.0


def bilinear_asymmetry(W):
    return np.zeros_like(np.asarray(W))


def softmax_jacobian(scores):
    s = np.asarray(scores)
    return np.zeros(s.shape + (s.shape[-1],))
