"""Bahdanau attention learns to reverse token sequences; its attention is the anti-diagonal.

Sources of 3 to 8 tokens are padded to 8 and masked (Embedding(mask_zero=True) carries the
mask to the decoder); the target is the reversed source followed by an end token. The
decoder's attention history, drawn with `plot_attention`, shows output step t looking at
source position L-1-t.

Run: python examples/bahdanau_reverse.py [--out DIR] [--epochs N] [--train-size N]
"""

import argparse
import os
import time
from pathlib import Path

from grader import quiet

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
quiet.install()  # before TensorFlow: its start-up lines say nothing here

import keras  # noqa: E402
import numpy as np  # noqa: E402

from attnkit.seq2seq import BahdanauDecoder  # noqa: E402

PAD, BOS, EOS, FIRST = 0, 1, 2, 3


def make_data(rng, count, vocab_size, min_length, max_length):
    """Padded sources, decoder inputs (BOS + reversed), targets (reversed + EOS), lengths."""
    lengths = rng.integers(min_length, max_length + 1, count)
    source = np.zeros((count, max_length), "int32")
    decoder_in = np.zeros((count, max_length + 1), "int32")
    target = np.zeros((count, max_length + 1), "int32")
    for b, n in enumerate(lengths):
        tokens = rng.integers(FIRST, vocab_size, n)
        source[b, :n] = tokens
        decoder_in[b, 0] = BOS
        decoder_in[b, 1 : n + 1] = tokens[::-1]
        target[b, :n] = tokens[::-1]
        target[b, n] = EOS
    return source, decoder_in, target, lengths.astype("int32")


def build(vocab_size, max_length, units):
    """Encoder (embedding + bidirectional GRU) and the Bahdanau decoder, as Keras models."""
    source = keras.Input((max_length,), dtype="int32", name="source")
    decoder_in = keras.Input((None,), dtype="int32", name="decoder_in")
    embedded = keras.layers.Embedding(vocab_size, units, mask_zero=True)(source)
    states = keras.layers.Bidirectional(keras.layers.GRU(units, return_sequences=True))(embedded)
    decoder = BahdanauDecoder(vocab_size, units, 2 * units)
    logits = decoder(decoder_in, states)  # the padding mask travels with `states`
    model = keras.Model([source, decoder_in], logits)
    encoder = keras.Model(source, states)
    return model, encoder, decoder


def train(
    vocab_size=13,
    min_length=3,
    max_length=8,
    units=32,
    train_size=3000,
    epochs=6,
    batch_size=64,
    learning_rate=1e-2,
    seed=0,
):
    """Trains encoder and decoder with teacher forcing; returns (encoder, decoder, seconds)."""
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    source, decoder_in, target, _ = make_data(rng, train_size, vocab_size, min_length, max_length)
    model, encoder, decoder = build(vocab_size, max_length, units)
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    weights = (target != PAD).astype("float32")  # the reversed tokens and EOS
    start = time.perf_counter()
    model.fit(
        [source, decoder_in],
        target,
        sample_weight=weights,
        epochs=epochs,
        batch_size=batch_size,
        verbose=0,
    )
    return encoder, decoder, time.perf_counter() - start


def main(out_dir=None, test_size=500, seed=0, **train_kwargs):
    """Trains, decodes held-out sequences greedily, saves `bahdanau_reverse.png`.

    Returns a dict with `token_accuracy` (reversed tokens and EOS), `sequence_accuracy`,
    `anti_diagonal_weight` (mean α[t, L-1-t]), `padded_weight` (the largest weight on a padded
    source position: the mask keeps it 0, trained or not), `train_seconds` and, with
    `out_dir`, `figure` (the PNG path).
    """
    encoder, decoder, seconds = train(seed=seed, **train_kwargs)
    vocab_size = train_kwargs.get("vocab_size", 13)
    min_length = train_kwargs.get("min_length", 3)
    max_length = train_kwargs.get("max_length", 8)
    source, _, target, lengths = make_data(
        np.random.default_rng(seed + 1), test_size, vocab_size, min_length, max_length
    )
    tokens, attention = decoder.decode(
        encoder(source), BOS, max_length + 1, encoder_outputs_mask=source != PAD, end_token=EOS
    )
    tokens = keras.ops.convert_to_numpy(tokens)
    attention = keras.ops.convert_to_numpy(attention)
    valid = np.arange(max_length + 1)[None] <= lengths[:, None]  # reversed tokens and EOS
    token_accuracy = float(np.mean(tokens[valid] == target[valid]))
    sequence_accuracy = float(np.mean(np.all((tokens == target) | ~valid, axis=1)))
    anti_diagonal = [attention[b, t, n - 1 - t] for b, n in enumerate(lengths) for t in range(n)]
    anti_diagonal_weight = float(np.mean(anti_diagonal))
    padded_weight = float(np.max(np.where((source == PAD)[:, None, :], attention, 0.0)))
    print(
        f"trained in {seconds:.1f} s; token accuracy {token_accuracy:.1%}, whole sequences "
        f"{sequence_accuracy:.1%}, mean weight on the anti-diagonal {anti_diagonal_weight:.3f}"
    )
    results = {
        "token_accuracy": token_accuracy,
        "sequence_accuracy": sequence_accuracy,
        "anti_diagonal_weight": anti_diagonal_weight,
        "padded_weight": padded_weight,
        "train_seconds": seconds,
    }
    if out_dir is not None:
        import matplotlib

        matplotlib.use("Agg")
        from attnkit.viz import plot_attention, save_figure

        b = int(np.argmax(lengths))
        n = int(lengths[b])
        fig = plot_attention(
            attention[b, : n + 1, :n],
            x_labels=[str(t) for t in source[b, :n]],
            y_labels=[str(t) if t != EOS else "<eos>" for t in tokens[b, : n + 1]],
            titles=["Bahdanau attention, reversing"],
            xlabel="source tokens",
            ylabel="generated tokens",
        )
        path = save_figure(fig, out_dir, "bahdanau_reverse")
        results["figure"] = str(path)
        print(f"saved {path}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--train-size", type=int, default=3000, help="training examples")
    arguments = parser.parse_args()
    main(arguments.out, epochs=arguments.epochs, train_size=arguments.train_size)
