"""Nadaraya-Watson kernel regression, non-parametric and parametric (the slides' first demo).

A noisy 1-D function is regressed with attention pooling: the test inputs are the queries,
the training inputs the keys and the training outputs the values. The parametric version
learns the inverse bandwidth w, each training point left out of its own prediction.

Run: python examples/nadaraya_watson.py [--out DIR] [--epochs N]
"""

import argparse
import os
from pathlib import Path

from grader import quiet

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
quiet.install()  # before TensorFlow: its start-up lines say nothing here

import keras  # noqa: E402
import numpy as np  # noqa: E402

from attnkit.kernel_regression import NadarayaWatson, ParametricNadarayaWatson  # noqa: E402


def f(x):
    return 2 * np.sin(x) + x**0.8


def make_data(rng, count, noise):
    x = np.sort(rng.uniform(0, 5, count)).astype("float32")
    return x, (f(x) + rng.normal(0.0, noise, count)).astype("float32")


def mse(a, b):
    return float(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2))


def predict(layer, x_query, x_train, y_train):
    out, weights = layer(x_query[None], x_train[None], y_train[None], return_attention_scores=True)
    return keras.ops.convert_to_numpy(out)[0], keras.ops.convert_to_numpy(weights)[0]


def train_parametric(x_train, y_train, epochs=100, learning_rate=0.5):
    """Fits w by leave-one-out MSE on the training set (full batch); returns the layer."""
    n = len(x_train)
    queries, keys, values = keras.Input((n,)), keras.Input((n,)), keras.Input((n,))
    layer = ParametricNadarayaWatson()
    leave_one_out = ~np.eye(n, dtype=bool)
    model = keras.Model(
        [queries, keys, values],
        layer(queries, keys, values, attention_mask=leave_one_out),
    )
    model.compile(optimizer=keras.optimizers.Adam(learning_rate), loss="mse")
    batch = [x_train[None], x_train[None], y_train[None]]
    model.fit(batch, y_train[None], epochs=epochs, batch_size=1, verbose=0)
    return layer


def main(out_dir=None, n_train=100, n_test=100, noise=0.3, bandwidth=0.5, seed=0, epochs=100):
    """Fits the three kernels and the parametric model (`epochs` full-batch steps), saves
    `nadaraya_watson.png`.

    Returns a dict of held-out MSEs (`constant_mse`, `<kernel>_mse`, `parametric_init_mse`,
    `parametric_mse`), `w_init`, `w_learned` and, with `out_dir`, `figure`.
    """
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    x_train, y_train = make_data(rng, n_train, noise)
    x_test, y_test = make_data(rng, n_test, noise)
    results = {"constant_mse": mse(np.full_like(y_test, y_train.mean()), y_test)}
    for kernel in ("gaussian", "boxcar", "epanechnikov"):
        pred, _ = predict(NadarayaWatson(kernel, bandwidth), x_test, x_train, y_train)
        results[f"{kernel}_mse"] = mse(pred, y_test)
    _, nonparametric_weights = predict(
        NadarayaWatson("gaussian", bandwidth), x_test, x_train, y_train
    )

    layer = ParametricNadarayaWatson()
    layer.build((1, n_test), (1, n_train), (1, n_train))
    results["w_init"] = float(keras.ops.convert_to_numpy(layer.w))
    results["parametric_init_mse"] = mse(predict(layer, x_test, x_train, y_train)[0], y_test)
    layer = train_parametric(x_train, y_train, epochs=epochs)
    results["w_learned"] = float(keras.ops.convert_to_numpy(layer.w))
    pred, parametric_weights = predict(layer, x_test, x_train, y_train)
    results["parametric_mse"] = mse(pred, y_test)
    for key, value in results.items():
        print(f"{key:>22}: {value:.4f}")
    if out_dir is not None:
        import matplotlib

        matplotlib.use("Agg")
        from attnkit.viz import plot_attention, save_figure

        fig = plot_attention(
            np.stack([nonparametric_weights, parametric_weights]),
            titles=[f"Gaussian, h = {bandwidth}", f"parametric, w = {results['w_learned']:.2f}"],
            xlabel="sorted training inputs (keys)",
            ylabel="sorted test inputs (queries)",
        )
        path = save_figure(fig, out_dir, "nadaraya_watson")
        results["figure"] = str(path)
        print(f"saved {path}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--epochs", type=int, default=100, help="of the parametric model")
    arguments = parser.parse_args()
    main(arguments.out, epochs=arguments.epochs)
