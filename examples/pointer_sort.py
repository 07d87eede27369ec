"""Pointer network that learns to sort lists of 5 numbers (NNDL 8.2.1.5, Vinyals 2015).

Run: python examples/pointer_sort.py [--out DIR] [--epochs N] [--train-size N]
"""

import argparse
import math
import os
import time
from pathlib import Path

from grader import quiet

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
quiet.install()  # before TensorFlow: its start-up lines say nothing here

import keras  # noqa: E402
import numpy as np  # noqa: E402

from attnkit.pointer import PointerNetwork  # noqa: E402


def make_lists(rng, count, length):
    """Lists of uniform numbers in [0, 1) and the indices that sort them (ascending)."""
    x = rng.random((count, length)).astype("float32")
    return x[..., None], np.argsort(x, axis=-1).astype("int32")


def train(
    length=5, units=64, train_size=20000, epochs=6, batch_size=128, learning_rate=1e-2, seed=0
):
    """Trains a `PointerNetwork` to sort with teacher forcing; returns (layer, seconds)."""
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    x, targets = make_lists(rng, train_size, length)
    inputs = keras.Input((length, 1))
    target_in = keras.Input((length,), dtype="int32")
    pointer = PointerNetwork(units)
    model = keras.Model([inputs, target_in], pointer(inputs, target_in))
    model.compile(
        optimizer=keras.optimizers.Adam(
            keras.optimizers.schedules.CosineDecay(
                learning_rate, decay_steps=epochs * math.ceil(train_size / batch_size)
            )
        ),
        loss=keras.losses.SparseCategoricalCrossentropy(),
    )
    start = time.perf_counter()
    model.fit([x, targets], targets, epochs=epochs, batch_size=batch_size, verbose=0)
    return pointer, time.perf_counter() - start


def main(out_dir=None, test_size=1000, seed=0, **train_kwargs):
    """Trains, decodes held-out lists greedily, saves `pointer_sort.png` to `out_dir`.

    Returns a dict with `list_accuracy` (whole lists exactly sorted), `position_accuracy`,
    `train_seconds` and, with `out_dir`, `figure` (the PNG path).
    """
    pointer, seconds = train(seed=seed, **train_kwargs)
    length = train_kwargs.get("length", 5)
    x, targets = make_lists(np.random.default_rng(seed + 1), test_size, length)
    indices, probs = pointer.decode(x)
    indices = keras.ops.convert_to_numpy(indices)
    probs = keras.ops.convert_to_numpy(probs)
    list_accuracy = float(np.mean(np.all(indices == targets, axis=-1)))
    position_accuracy = float(np.mean(indices == targets))
    print(
        f"trained in {seconds:.1f} s; whole lists sorted: {list_accuracy:.1%}, "
        f"positions: {position_accuracy:.1%}"
    )
    print("example:", np.round(x[0, :, 0], 2), "->", np.round(x[0, indices[0], 0], 2))
    results = {
        "list_accuracy": list_accuracy,
        "position_accuracy": position_accuracy,
        "train_seconds": seconds,
    }
    if out_dir is not None:
        import matplotlib

        matplotlib.use("Agg")
        from attnkit.viz import plot_attention, save_figure

        shown = 3
        fig = plot_attention(
            probs[None, :shown],
            x_labels=None,
            titles=[" ".join(f"{v:.2f}" for v in x[b, :, 0]) for b in range(shown)],
            xlabel="input position",
            ylabel="output step",
        )
        path = save_figure(fig, out_dir, "pointer_sort")
        results["figure"] = str(path)
        print(f"saved {path}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--train-size", type=int, default=20000, help="training examples")
    arguments = parser.parse_args()
    main(arguments.out, epochs=arguments.epochs, train_size=arguments.train_size)
