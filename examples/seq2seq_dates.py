"""An encoder–decoder with Bahdanau attention learns to rewrite dates; its attention is the
alignment.

The task of the lab train-seq2seq, made by the same generator (grader/reference/tasks.py): a
date "14 <Jul> 2023" (the day's two digits, a month token, the year's four digits) is written
as the 8 digits "1 4 0 7 2 0 2 3". attnkit's `BahdanauDecoder` is trained with teacher forcing
(Keras's progress bar on a terminal, a line per epoch otherwise), then decodes held-out dates
greedily. Each output digit has one source token to read: the day's digits read the day's, both
of the month's digits the month token, the year's digits the year's. The decoder's attention,
drawn with `plot_attention`, shows it.

Run: python examples/seq2seq_dates.py [--epochs N] [--out DIR]
"""

import argparse
import os
import sys
import time
from pathlib import Path

from grader import quiet

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
quiet.install()  # before TensorFlow: its start-up lines say nothing here

import keras  # noqa: E402
import numpy as np  # noqa: E402

from attnkit.seq2seq import BahdanauDecoder  # noqa: E402
from grader.reference import tasks  # noqa: E402

MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()


def source_text(source):
    """A source row (7 tokens) as a reader writes it: `14 Jul 2023`."""
    day = "".join(str(t) for t in source[:2])
    year = "".join(str(t) for t in source[3:])
    return f"{day} {MONTHS[int(source[2]) - tasks.FIRST_MONTH]} {year}"


def source_labels(source):
    """The source's tokens, one label each, for the picture's columns."""
    return [str(t) if t < tasks.FIRST_MONTH else MONTHS[t - tasks.FIRST_MONTH] for t in source]


def build(units):
    """Encoder (embedding + bidirectional GRU) and the Bahdanau decoder, as Keras models."""
    source = keras.Input((tasks.DATE_SOURCE,), dtype="int32", name="source")
    decoder_in = keras.Input((None,), dtype="int32", name="decoder_in")
    embedded = keras.layers.Embedding(tasks.DATE_VOCABULARY, units)(source)
    states = keras.layers.Bidirectional(keras.layers.GRU(units, return_sequences=True))(embedded)
    decoder = BahdanauDecoder(tasks.DATE_VOCABULARY, units, 2 * units)
    model = keras.Model([source, decoder_in], decoder(decoder_in, states))
    return model, keras.Model(source, states), decoder


def main(
    epochs=12,
    train_count=4000,
    test_count=500,
    units=32,
    seed=0,
    out_dir=None,
    verbose=None,
):
    """Trains, decodes held-out dates greedily and, with `out_dir`, saves `seq2seq_dates.png`.

    Returns a dict with `digit_accuracy` and `date_accuracy` (greedy decoding, every digit of
    the date right), `aligned` (the share of output steps whose largest attention weight is on
    the source token they translate), `seconds` (training) and, with `out_dir`, `figure`.
    """
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    inputs, target = tasks.dates_data(rng, train_count)
    model, encoder, decoder = build(units)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    source, decoder_in = inputs[:, : tasks.DATE_SOURCE], inputs[:, tasks.DATE_SOURCE :]
    start = time.perf_counter()
    model.fit([source, decoder_in], target, epochs=epochs, batch_size=64, verbose=verbose)
    seconds = time.perf_counter() - start

    held_out = tasks.dates_data(np.random.default_rng(seed + 1), test_count)[0]
    held_source = held_out[:, : tasks.DATE_SOURCE]
    answers = tasks.dates_answers(held_out)
    tokens, attention = decoder.decode(encoder(held_source), tasks.DATE_START, tasks.DATE_TARGET)
    tokens = keras.ops.convert_to_numpy(tokens)
    attention = keras.ops.convert_to_numpy(attention)
    digit_accuracy = float(np.mean(tokens == answers))
    date_accuracy = float(np.mean(np.all(tokens == answers, axis=1)))
    aligned = float(np.mean(attention.argmax(-1) == tasks.DATE_ALIGNMENT[None]))
    for row in range(3):
        written = "".join(str(t) for t in tokens[row])
        mark = "right" if (tokens[row] == answers[row]).all() else "wrong"
        print(f"{source_text(held_source[row])} -> {written} ({mark})")
    print(
        f"trained in {seconds:.1f} s; digits right {digit_accuracy:.1%}, whole dates "
        f"{date_accuracy:.1%}; the largest weight on the translated token in {aligned:.1%} "
        "of the steps"
    )
    results = {
        "digit_accuracy": digit_accuracy,
        "date_accuracy": date_accuracy,
        "aligned": aligned,
        "seconds": seconds,
    }
    if out_dir is not None:
        import matplotlib

        matplotlib.use("Agg")
        from attnkit.viz import plot_attention, save_figure

        fig = plot_attention(
            attention[0],
            x_labels=source_labels(held_source[0]),
            y_labels=[str(t) for t in tokens[0]],
            titles=["Bahdanau attention, rewriting a date"],
            xlabel="source tokens",
            ylabel="generated digits",
        )
        path = save_figure(fig, out_dir, "seq2seq_dates")
        results["figure"] = str(path)
        print(f"saved {path}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("."), help="where the PNG goes")
    arguments = parser.parse_args()
    main(epochs=arguments.epochs, seed=arguments.seed, out_dir=arguments.out)
