"""The child's own `fit` (grader.sandbox.child._fitting): it records each epoch's loss and builds
the optimizer before Keras traces the training step, so that TensorFlow traces that step once,
not twice, and the training is the same, bit for bit, as Keras's own."""

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from grader.sandbox.child import _fitting  # noqa: E402

pytestmark = pytest.mark.labs


def _model():
    keras.utils.set_random_seed(7)
    model = keras.Sequential(
        [keras.Input((5,)), keras.layers.Dense(8, "tanh"), keras.layers.Dense(3)]
    )
    model.compile(keras.optimizers.Adam(0.05), "mse")
    return model


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(100, 5)).astype("float32"), rng.normal(size=(100, 3)).astype("float32")


def _count_traces(monkeypatch):
    traced = []
    original = keras.Model.train_step

    def train_step(self, data):
        traced.append(1)
        return original(self, data)

    monkeypatch.setattr(keras.Model, "train_step", train_step)
    return traced


def _train(inside_fitting, losses):
    model = _model()
    inputs, targets = _data()
    if inside_fitting:
        with _fitting(keras, losses):
            model.fit(inputs, targets, batch_size=32, epochs=3, verbose=0)
    else:
        model.fit(inputs, targets, batch_size=32, epochs=3, verbose=0)
    return [np.array(weight) for weight in model.get_weights()]


def test_the_training_step_is_traced_once_and_trains_as_keras_does(monkeypatch):
    traced = _count_traces(monkeypatch)
    keras_own = _train(False, [])
    keras_traces = len(traced)
    traced.clear()
    losses = []
    ours = _train(True, losses)

    assert keras_traces == 2  # Keras alone: once building the optimizer, once more after
    assert len(traced) == 1
    assert len(losses) == 3 and all(np.isfinite(losses))
    for own, mine in zip(keras_own, ours, strict=True):
        np.testing.assert_array_equal(own, mine)


def test_a_model_with_its_own_training_step_is_left_to_keras(monkeypatch):
    applied_to = []

    class OwnStep(keras.Sequential):
        def train_step(self, data):
            applied_to.append(self.optimizer.built)
            return super().train_step(data)

    keras.utils.set_random_seed(7)
    model = OwnStep([keras.Input((5,)), keras.layers.Dense(3)])
    model.compile(keras.optimizers.Adam(0.05), "mse")
    inputs, targets = _data()
    with _fitting(keras, []):
        model.fit(inputs, targets, batch_size=32, epochs=1, verbose=0)
    # Not built by the grader before the step: Keras built it inside its first tracing.
    assert applied_to and applied_to[0] is False
    assert model.optimizer.built


def test_fit_is_keras_own_again_after(monkeypatch):
    original = keras.Model.fit
    with _fitting(keras, []):
        assert keras.Model.fit is not original
    assert keras.Model.fit is original


def test_each_fit_records_the_examples_it_trains_on_its_batch_and_its_epochs():
    model = _model()
    inputs, targets = _data()
    fits = []
    with _fitting(keras, [], fits):
        model.fit(inputs, targets, batch_size=10, epochs=2, validation_split=0.75, verbose=0)
        model.fit(x=inputs[:40], y=targets[:40], epochs=1, verbose=0)
        model.fit(inputs, targets, 25, 3, verbose=0, validation_data=(inputs, targets))
    assert [row[:3] for row in fits] == [[25.0, 10.0, 2.0], [40.0, 32.0, 1.0], [100.0, 25.0, 3.0]]
    assert all(np.isnan(row[3:]).all() for row in fits)  # no given model: not known


def test_a_fit_on_a_dataset_records_what_it_cannot_know_as_unknown():
    import tensorflow as tf

    model = _model()
    inputs, targets = _data()
    fits = []
    with _fitting(keras, [], fits):
        model.fit(tf.data.Dataset.from_tensor_slices((inputs, targets)).batch(20), verbose=0)
    rows, batch, epochs = fits[0][:3]
    assert np.isnan(rows) and np.isnan(batch) and epochs == 1.0


def test_a_fit_records_whether_it_trained_the_given_model_its_weights_and_its_pairs():
    given_model = _model()
    inputs, targets = _data()
    fits = []
    with _fitting(keras, [], fits, (given_model, inputs, targets)):
        given_model.fit(inputs, targets, epochs=1, verbose=0)
        apart = np.random.default_rng(1).permutation(len(inputs))
        given_model.fit(inputs, targets[apart], epochs=1, verbose=0, sample_weight=np.ones(100))
        _model().fit(inputs, targets, epochs=1, verbose=0)  # another model
    assert fits[0][3:] == [1.0, 0.0, 1.0]
    assert fits[1][3:5] == [1.0, 1.0] and fits[1][5] < 0.1
    assert fits[2][3] == 0.0
