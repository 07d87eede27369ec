"""Exercise 8-2 that is wrong on its own: it only uses what the student's 8-1 / 8-6 files left behind.

Graded alone (a process per exercise) every part raises or returns zeros.
"""

import builtins
import os
import sys

import keras
from keras import ops
import numpy as np


class ScaledDotScore(keras.layers.Layer):
    def call(self, query, key):
        return builtins._r9_sds(self, query, key)           # channel 1


class BilinearScore(keras.layers.Layer):
    def build(self, query_shape, key_shape):
        self.kernel = self.add_weight(name="kernel", shape=(query_shape[-1], key_shape[-1]))

    def call(self, query, key):
        return keras.ops._r9_bil(self, query, key)          # channel 2


def dot_product_variance(d, var_q=1.0, var_k=1.0):
    return np._r9_vars[0](d, var_q, var_k)                  # channel 3


def scaled_dot_product_variance(d, var_q=1.0, var_k=1.0):
    return np._r9_vars[1](d, var_q, var_k)                  # channel 3


def bilinear_asymmetry(W):
    return sys.modules["_r9_cache"].asym(W)                 # channel 4


def softmax_jacobian(scores):
    for where in (os.getcwd(), os.path.dirname(os.path.abspath(__file__))):
        path = os.path.join(where, "_r9_jac_src.txt")
        if os.path.exists(path):
            raise RuntimeError("R9PROBE6 found in %s (cwd %s): %s ls=%s" % (
                os.path.basename(where), os.path.basename(os.getcwd()), open(path).readline().strip(),
                ",".join(sorted(os.listdir(where)))))
    raise RuntimeError("r9: no file left by another exercise")
