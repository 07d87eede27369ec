"""Exercise 8-2 that is wrong on its own: each part takes its code from a setting the student's
8-1 / 8-6 files left (environment, sys.path, warnings filters, sys.meta_path, sys.displayhook)."""

import os
import sys
import warnings

import keras


def _code(src):
    ns = {}
    exec(src, ns)
    return ns["f"]


class ScaledDotScore(keras.layers.Layer):
    def call(self, query, key):
        return _code(os.environ["R9_SDS"])(self, query, key)


class BilinearScore(keras.layers.Layer):
    def build(self, query_shape, key_shape):
        self.kernel = self.add_weight(name="kernel", shape=(query_shape[-1], key_shape[-1]))

    def call(self, query, key):
        src = [p for p in sys.path if isinstance(p, str) and p.startswith("R9CODE:")][0][7:]
        return _code(src)(self, query, key)


def _var_code():
    for flt in warnings.filters:
        msg = flt[1]
        pattern = getattr(msg, "pattern", msg)
        if isinstance(pattern, str) and pattern.startswith("R9CODE:"):
            return _code(pattern[7:])
    raise RuntimeError("r9: no warnings filter left")


def dot_product_variance(d, var_q=1.0, var_k=1.0):
    return _var_code()(d, var_q, var_k)


def scaled_dot_product_variance(d, var_q=1.0, var_k=1.0):
    return _var_code()(d, var_q, var_k) / float(d)


def bilinear_asymmetry(W):
    return [f for f in sys.meta_path if hasattr(f, "r9_asym")][0].r9_asym(W)


def softmax_jacobian(scores):
    return sys.displayhook.r9_jac(scores)
