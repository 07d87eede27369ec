"""Neural Turing Machine on the copy task (Graves et al. 2014, §4.1), on short sequences.

The input is a random sequence of L bit vectors (1 ≤ L ≤ max_length), then a delimiter flag on
an extra channel; during the next L steps the input is blank and the network must output the
sequence again. The loss counts only those L output steps. After training, the bit error is the
number of wrongly predicted bits per sequence (outputs thresholded at 0.5) on fresh sequences.

Run: python examples/ntm_copy.py [--steps 600] [--max-length 5] [--bits 4] [--seed 0]

Source: NNDL 8.5.2; Graves et al. 2014 §4.1 (copy).
"""

import argparse
import os
import time

from grader import quiet

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
quiet.install()  # before TensorFlow: its start-up lines say nothing here

import keras  # noqa: E402
import numpy as np  # noqa: E402

import attnkit.memory  # noqa: E402


def make_batch(rng, batch_size, max_length=5, bits=4, min_length=1):
    """One batch of copy-task sequences, padded to `2 * max_length + 1` steps.

    Returns:
        `(inputs, targets, weights)`: inputs `(B, T, bits + 1)` (the last channel is the
        delimiter), targets `(B, T, bits)` and weights `(B, T)` (1 on the L output steps).
    """
    steps = 2 * max_length + 1
    inputs = np.zeros((batch_size, steps, bits + 1), "float32")
    targets = np.zeros((batch_size, steps, bits), "float32")
    weights = np.zeros((batch_size, steps), "float32")
    for b in range(batch_size):
        length = int(rng.integers(min_length, max_length + 1))
        sequence = rng.integers(0, 2, size=(length, bits)).astype("float32")
        inputs[b, :length, :bits] = sequence
        inputs[b, length, bits] = 1.0
        targets[b, length + 1 : 2 * length + 1] = sequence
        weights[b, length + 1 : 2 * length + 1] = 1.0
    return inputs, targets, weights


def build_model(max_length=5, bits=4, memory_size=16, memory_width=8, controller_units=64):
    inputs = keras.Input((2 * max_length + 1, bits + 1))
    logits = attnkit.memory.NeuralTuringMachine(
        bits,
        memory_size=memory_size,
        memory_width=memory_width,
        controller="lstm",
        controller_units=controller_units,
        name="ntm",
    )(inputs)
    return keras.Model(inputs, logits)


def bit_errors(model, inputs, targets, weights):
    """Wrong bits per sequence: outputs thresholded at 0.5 against the targets."""
    logits = model.predict(inputs, verbose=0, batch_size=256)
    wrong = ((logits > 0.0) != (targets > 0.5)) & (weights[..., None] > 0)
    return wrong.sum(axis=(1, 2))


def train_and_evaluate(
    steps=600,
    max_length=5,
    bits=4,
    batch_size=64,
    learning_rate=1e-2,
    num_test=500,
    seed=0,
    verbose=0,
    run_eagerly=False,
):
    """Trains an NTM on the copy task and measures it on fresh sequences (`run_eagerly`: op by
    op, for a run of a few steps, which tracing the recurrent loop would cost more than).

    Returns:
        A dict: `bit_error` (mean wrong bits per test sequence), `bit_error_rate` (wrong bits
        over all target bits), `initial_bit_error` (before training), `seconds`, `model`.
    """
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    model = build_model(max_length=max_length, bits=bits)
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate, clipnorm=10.0),
        loss=keras.losses.BinaryCrossentropy(from_logits=True),
        # XLA would compile the back-propagation through the recurrent loop for ~25 s on a
        # small CPU, longer than it saves on this short run (the layer itself supports XLA).
        jit_compile=False,
        run_eagerly=run_eagerly,
    )
    test = make_batch(np.random.default_rng(seed + 1), num_test, max_length, bits)
    initial = float(bit_errors(model, *test).mean())

    def batches():
        while True:
            yield make_batch(rng, batch_size, max_length, bits)

    start = time.perf_counter()
    epochs = min(10, steps)  # ten lines of progress; fewer for a run of a few steps
    model.fit(
        batches(), steps_per_epoch=steps // epochs, epochs=epochs, shuffle=False, verbose=verbose
    )
    seconds = time.perf_counter() - start
    errors = bit_errors(model, *test)
    return {
        "bit_error": float(errors.mean()),
        "bit_error_rate": float(errors.sum() / (test[2].sum() * bits)),
        "initial_bit_error": initial,
        "seconds": seconds,
        "model": model,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--max-length", type=int, default=5)
    parser.add_argument("--bits", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    result = train_and_evaluate(
        steps=args.steps, max_length=args.max_length, bits=args.bits, seed=args.seed, verbose=2
    )
    print(
        f"bit error per sequence: {result['initial_bit_error']:.2f} before training, "
        f"{result['bit_error']:.3f} after ({result['bit_error_rate']:.2%} of the bits); "
        f"training took {result['seconds']:.1f} s"
    )


if __name__ == "__main__":
    main()
