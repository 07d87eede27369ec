"""The child's build call of a layer case (grader.sandbox.child._filled_with_zeros): a weight the
case assigns afterwards starts as zeros, every other weight as its layer asked, and the layer is
graded the same either way."""

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from grader.sandbox.child import _filled_with_zeros  # noqa: E402

pytestmark = pytest.mark.labs


class TwoWeights(keras.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], 3), initializer="ones", name="w")
        self.v = self.add_weight(shape=(3,), initializer="ones", name="v")
        self.u = self.add_weight((2, 2), "ones", name="u")  # the legacy positional call

    def call(self, x):
        return keras.ops.matmul(x, self.w) + self.v


def _built(assigned):
    layer = TwoWeights()
    with _filled_with_zeros(keras, assigned):
        layer(np.ones((1, 4), "float32"))
    return {weight.name: keras.ops.convert_to_numpy(weight) for weight in layer.weights}


def test_only_the_weights_the_case_assigns_start_as_zeros():
    values = _built({"w": np.full((4, 3), 2.0), "u": np.full((2, 2), 2.0)})
    assert not values["w"].any()  # assigned by the case, same shape: zeros
    assert (values["v"] == 1).all()  # not assigned: its own initializer
    assert (values["u"] == 1).all()  # given positionally: left as the layer wrote it


def test_a_weight_of_another_shape_keeps_its_initializer():
    values = _built({"w": np.full((5, 3), 2.0)})
    assert (values["w"] == 1).all()


def test_add_weight_is_keras_own_again_afterwards():
    original = keras.layers.Layer.add_weight
    _built({"w": np.zeros((4, 3))})
    assert keras.layers.Layer.add_weight is original


NAMED_LAYER = """
class BilinearScore(keras.layers.Layer):
    def build(self, query_shape, key_shape):
        self.kernel = self.add_weight(name="kernel", shape=(query_shape[-1], key_shape[-1]))
        self.helper = keras.layers.Dense(2)

    def call(self, query, key):
        raise RuntimeError(f"named {self.name} {self.kernel.path} {self.helper.name}")
"""


def test_every_case_names_its_layer_as_if_it_were_the_first(tmp_path):
    """Keras counts every layer a process made into the next one's name; the child counts
    afresh for each case, so that a message names the layer alike on every case (and
    TensorFlow keeps the weights' handle ops in its cache, issue 48)."""
    from grader.grading import grade
    from tests.support.grading import failures, submit

    result = grade("8-2", submit(tmp_path, "8-2", NAMED_LAYER), parts=["BilinearScore"])
    messages = {c.message for c in failures(result.part("BilinearScore"))}
    assert len(messages) == 1, messages  # every case, public and hidden, alike
    assert "named bilinear_score bilinear_score/kernel dense [" in messages.pop()
