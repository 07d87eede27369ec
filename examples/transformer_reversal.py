"""A small Transformer learns to reverse token sequences, and decodes greedily with a cache.

One `TransformerEncoderBlock` reads the source, one `TransformerDecoderBlock` writes the reversed
sequence (teacher forcing in training). Positions are learned vectors added to both embeddings;
without them the task is impossible (self-attention alone ignores order, NNDL 8.3). The held-out
sequences are decoded one token at a time through the decoder's key/value cache, and the
accuracy of the tokens and of whole sequences is printed. With `--out DIR` the decoder's
cross-attention over the source is drawn, one panel per head, as `DIR/transformer_reversal.png`:
a head that reverses looks along the anti-diagonal (output step t reads source token L − 1 − t).

Run: python examples/transformer_reversal.py [--epochs N] [--seed S] [--out DIR]
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
from keras import ops  # noqa: E402

import attnkit  # noqa: E402

BOS, FIRST = 1, 2  # token 0 is unused; 1 starts the decoder; 2 … vocab_size − 1 are symbols


def make_data(rng, count, vocab_size, length):
    """Sources, decoder inputs (BOS + reversed[:-1]) and targets (reversed)."""
    source = rng.integers(FIRST, vocab_size, (count, length)).astype("int32")
    target = source[:, ::-1].copy()
    decoder_in = np.concatenate([np.full((count, 1), BOS, "int32"), target[:, :-1]], axis=1)
    return source, decoder_in, target


class Reverser(keras.Model):
    """Embeddings + learned positions, one encoder block, one decoder block, a softmax layer."""

    def __init__(self, vocab_size, length, model_dim=64, num_heads=4, **kwargs):
        super().__init__(**kwargs)
        self.length = length
        self.source_embedding = keras.layers.Embedding(vocab_size, model_dim)
        self.target_embedding = keras.layers.Embedding(vocab_size, model_dim)
        self.positions = keras.layers.Embedding(length, model_dim)
        self.encoder = attnkit.TransformerEncoderBlock(
            num_heads, 4 * model_dim, norm_first=True, seed=1
        )
        self.decoder = attnkit.TransformerDecoderBlock(
            num_heads, 4 * model_dim, norm_first=True, seed=2
        )
        self.final_norm = keras.layers.LayerNormalization()
        self.logits = keras.layers.Dense(vocab_size)

    def encode(self, source):
        places = self.positions(ops.arange(ops.shape(source)[1]))
        return self.encoder(self.source_embedding(source) + places)

    def _embed_target(self, tokens, start=0):
        places = self.positions(ops.arange(ops.shape(tokens)[1]) + start)
        return self.target_embedding(tokens) + places

    def call(self, inputs, training=None):
        source, decoder_in = inputs
        memory = self.encode(source)
        hidden = self.decoder(self._embed_target(decoder_in), memory, training=training)
        return self.logits(self.final_norm(hidden))

    def generate(self, source, return_logits=False):
        """Greedy decoding, one token per step through the self-attention cache; with
        `return_logits`, also the logits of every step (batch, length, vocab_size)."""
        memory = self.encode(source)
        batch = ops.shape(source)[0]
        cache = self.decoder.empty_cache(batch, self.length)
        token = ops.full((batch, 1), BOS, "int32")
        outputs, logits = [], []
        for step in range(self.length):
            hidden, cache = self.decoder(
                self._embed_target(token, start=step),
                memory,
                self_attention_cache=cache,
                self_attention_cache_update_index=step,
            )
            logits.append(self.logits(self.final_norm(hidden)))
            token = ops.cast(ops.argmax(logits[-1], axis=-1), "int32")
            outputs.append(token)
        tokens = ops.convert_to_numpy(ops.concatenate(outputs, axis=1))
        if return_logits:
            return tokens, ops.convert_to_numpy(ops.concatenate(logits, axis=1))
        return tokens

    def cross_attention(self, source, decoder_in):
        """The decoder's weights over the source, (batch, heads, length, length), with teacher
        forcing. The block returns no weights, so its pre-norm path up to the cross-attention
        is run again through its sub-layers (no dropout: the weights are those of inference)."""
        memory = self.encode(source)
        block = self.decoder
        x = self._embed_target(decoder_in)
        x = x + block.self_attention(
            block.self_attention_norm(x), block.self_attention_norm(x), use_causal_mask=True
        )
        _, weights = block.cross_attention(
            block.cross_attention_norm(x), memory, return_attention_scores=True
        )
        return ops.convert_to_numpy(weights)


def main(
    epochs=4,
    seed=0,
    vocab_size=12,
    length=8,
    train_count=6000,
    test_count=1000,
    out_dir=None,
    verbose=None,
    model_dim=64,
    run_eagerly=False,
):
    """Trains, decodes held-out sequences greedily with the cache, and with `out_dir` saves
    `transformer_reversal.png`. `verbose` is Keras's (default: a progress bar on a terminal,
    a line per epoch otherwise). `run_eagerly` trains without tracing a graph, which is
    quicker only for a few batches (the demo's fast test).

    Returns a dict with `token_accuracy`, `sequence_accuracy`, `cache_gap` (the largest
    difference between the logits of the cached steps and those of one full pass over the
    tokens they produced), `anti_diagonal_weight` (of the head that looks there most, its mean
    weight on source token L − 1 − t), `seconds` and, with `out_dir`, `figure` (the PNG path).
    """
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    source, decoder_in, target = make_data(rng, train_count, vocab_size, length)
    model = Reverser(vocab_size, length, model_dim=model_dim)
    model.compile(
        optimizer=keras.optimizers.Adam(2e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        run_eagerly=run_eagerly,
    )
    model.fit((source, decoder_in), target, epochs=epochs, batch_size=64, verbose=verbose)
    test_source, test_decoder_in, test_target = make_data(rng, test_count, vocab_size, length)
    predicted, step_logits = model.generate(test_source, return_logits=True)
    token_accuracy = float(np.mean(predicted == test_target))
    sequence_accuracy = float(np.mean(np.all(predicted == test_target, axis=1)))
    # The cache must change nothing: one full causal pass over the tokens the steps produced
    # gives the logits the steps gave.
    fed = np.concatenate([np.full((test_count, 1), BOS, "int32"), predicted[:, :-1]], axis=1)
    full_logits = ops.convert_to_numpy(model((test_source, fed)))
    cache_gap = float(np.max(np.abs(full_logits - step_logits)))
    weights = model.cross_attention(test_source, test_decoder_in)  # (B, H, L, L)
    mirrored = weights[:, :, np.arange(length), length - 1 - np.arange(length)]  # (B, H, L)
    head = int(np.argmax(mirrored.mean(axis=(0, 2))))
    anti_diagonal_weight = float(mirrored[:, head].mean())
    seconds = time.perf_counter() - start
    print(
        f"held-out {test_count} sequences of {length} tokens, greedy decoding with a cache: "
        f"token accuracy {token_accuracy:.3f}, sequence accuracy {sequence_accuracy:.3f}; "
        f"cross-attention head {head}: mean weight on the mirrored source token "
        f"{anti_diagonal_weight:.3f} ({seconds:.0f} s in all)"
    )
    results = {
        "token_accuracy": token_accuracy,
        "sequence_accuracy": sequence_accuracy,
        "cache_gap": cache_gap,
        "anti_diagonal_weight": anti_diagonal_weight,
        "seconds": seconds,
    }
    if out_dir is not None:
        import matplotlib

        matplotlib.use("Agg")
        from attnkit.viz import plot_attention, save_figure

        fig = plot_attention(
            weights[0],
            x_labels=[str(t) for t in test_source[0]],
            y_labels=[str(t) for t in test_target[0]],
            titles=[f"cross-attention, head {h}" for h in range(weights.shape[1])],
            xlabel="source tokens",
            ylabel="output tokens",
        )
        path = save_figure(fig, out_dir, "transformer_reversal")
        results["figure"] = str(path)
        print(f"saved {path}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("."), help="where the PNG goes")
    arguments = parser.parse_args()
    main(epochs=arguments.epochs, seed=arguments.seed, out_dir=arguments.out)
