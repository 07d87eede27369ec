"""Luong local-p attention: the predicted window centre p_t learns to follow the alignment.

Synthetic alignment task: output step t must emit the source token at position
a(t) = S-1-t (the sequence reversed), for sources of 5 to 10 tokens. The attended states are
the token embeddings, which carry no position, and the decoder reads only a constant token
(its GRU state, started from a GRU summary of the source, is a counter), so content cannot
say where to look: the decoder must predict the window centre
p_t = S·sigmoid(v_pᵀ tanh(W_p h_t)), and only the loss, through the Gaussian window
(σ = D/2), teaches it. The demo measures how close p_t comes to a(t).

Run: python examples/luong_local_p.py [--out DIR] [--epochs N] [--train-size N]
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

from attnkit.seq2seq import LuongAttention  # noqa: E402

PAD, BOS, FIRST = 0, 1, 2


def make_data(rng, count, vocab_size, min_length, max_length):
    """Padded sources, decoder inputs (a constant token), targets (reversed), lengths."""
    lengths = rng.integers(min_length, max_length + 1, count)
    source = np.zeros((count, max_length), "int32")
    decoder_in = np.zeros((count, max_length), "int32")
    target = np.zeros((count, max_length), "int32")
    for b, n in enumerate(lengths):
        tokens = rng.integers(FIRST, vocab_size, n)
        source[b, :n] = tokens
        target[b, :n] = tokens[::-1]
        decoder_in[b, :n] = BOS
    return source, decoder_in, target, lengths.astype("int32")


def build(vocab_size, max_length, units, window):
    source = keras.Input((max_length,), dtype="int32", name="source")
    decoder_in = keras.Input((max_length,), dtype="int32", name="decoder_in")
    lengths = keras.Input((), dtype="int32", name="lengths")
    embedded = keras.layers.Embedding(vocab_size, units, mask_zero=True)(source)
    # The attended states are the token embeddings themselves: they carry no position, so
    # the only way to find source position a(t) is the predicted centre p_t. A GRU reads
    # the source to give the decoder its initial state.
    final = keras.layers.GRU(units)(embedded)
    states = embedded
    target_embedded = keras.layers.Embedding(vocab_size, units)(decoder_in)
    h = keras.layers.GRU(units, return_sequences=True)(target_embedded, initial_state=final)
    attention = LuongAttention(units, score="general", mode="local-p", window=window)
    h_tilde, weights, centres = attention(
        h, states, key_lengths=lengths, return_attention_scores=True, return_positions=True
    )
    logits = keras.layers.Dense(vocab_size)(h_tilde)
    model = keras.Model([source, decoder_in, lengths], logits)
    probe = keras.Model([source, decoder_in, lengths], [logits, weights, centres])
    return model, probe


def train(
    vocab_size=12,
    min_length=5,
    max_length=10,
    units=32,
    window=2,
    train_size=4000,
    epochs=8,
    batch_size=64,
    learning_rate=1e-2,
    seed=0,
):
    """Trains the model; returns (probe, seconds), probe giving logits, weights and p_t."""
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    source, decoder_in, target, lengths = make_data(
        rng, train_size, vocab_size, min_length, max_length
    )
    model, probe = build(vocab_size, max_length, units, window)
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    start = time.perf_counter()
    model.fit(
        [source, decoder_in, lengths],
        target,
        sample_weight=(target != PAD).astype("float32"),
        epochs=epochs,
        batch_size=batch_size,
        verbose=0,
    )
    return probe, time.perf_counter() - start


def main(out_dir=None, test_size=500, seed=0, **train_kwargs):
    """Trains, measures p_t against the alignment on held-out data, saves `luong_local_p.png`.

    Returns a dict with `token_accuracy`, `mean_abs_error` (mean |p_t - a(t)|),
    `correlation` (of p_t and a(t)), `padded_weight` (the largest weight on a position past
    the source's end: the lengths keep it 0, trained or not), `centre_range` (the least and
    the largest p_t / S of the output steps: p_t = S·sigmoid(...) lies inside the source),
    `train_seconds` and, with `out_dir`, `figure`.
    """
    probe, seconds = train(seed=seed, **train_kwargs)
    vocab_size = train_kwargs.get("vocab_size", 12)
    min_length = train_kwargs.get("min_length", 5)
    max_length = train_kwargs.get("max_length", 10)
    source, decoder_in, target, lengths = make_data(
        np.random.default_rng(seed + 1), test_size, vocab_size, min_length, max_length
    )
    logits, weights, centres = probe.predict([source, decoder_in, lengths], verbose=0)
    valid = target != PAD
    aligned = (lengths[:, None] - 1 - np.arange(max_length)[None]).astype("float64")
    error = np.abs(centres - aligned)[valid]
    results = {
        "token_accuracy": float(np.mean(np.argmax(logits, -1)[valid] == target[valid])),
        "mean_abs_error": float(np.mean(error)),
        "correlation": float(np.corrcoef(centres[valid], aligned[valid])[0, 1]),
        "padded_weight": float(np.max(np.where((source == PAD)[:, None, :], weights, 0.0))),
        "centre_range": (
            float(np.min((centres / lengths[:, None])[valid])),
            float(np.max((centres / lengths[:, None])[valid])),
        ),
        "train_seconds": seconds,
    }
    print(
        f"trained in {seconds:.1f} s; token accuracy {results['token_accuracy']:.1%}; "
        f"mean |p_t - aligned| = {results['mean_abs_error']:.3f}, "
        f"correlation {results['correlation']:.3f}"
    )
    if out_dir is not None:
        import matplotlib

        matplotlib.use("Agg")
        from attnkit.viz import plot_attention, save_figure

        b = int(np.argmax(lengths))
        n = int(lengths[b])
        fig = plot_attention(
            weights[b, :n, :n],
            x_labels=[str(t) for t in source[b, :n]],
            y_labels=[
                f"{t} (p={p:.1f})" for t, p in zip(target[b, :n], centres[b, :n], strict=True)
            ],
            titles=["Luong local-p, reversing"],
            xlabel="source tokens",
            ylabel="output tokens (window centre)",
            panel_size=4.0,
        )
        path = save_figure(fig, out_dir, "luong_local_p")
        results["figure"] = str(path)
        print(f"saved {path}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--train-size", type=int, default=4000, help="training examples")
    arguments = parser.parse_args()
    main(arguments.out, epochs=arguments.epochs, train_size=arguments.train_size)
