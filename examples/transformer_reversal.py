"""A small Transformer learns to reverse token sequences, and decodes greedily with a cache.

One `TransformerEncoderBlock` reads the source, one `TransformerDecoderBlock` writes the reversed
sequence (teacher forcing in training). Positions are learned vectors added to both embeddings;
without them the task is impossible (self-attention alone ignores order, NNDL 8.3). The held-out
sequences are decoded one token at a time through the decoder's key/value cache, and the
accuracy of the tokens and of whole sequences is printed.

Run: python examples/transformer_reversal.py [--epochs N] [--seed S]
"""

import argparse
import os
import time

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

    def generate(self, source):
        """Greedy decoding, one token per step through the self-attention cache."""
        memory = self.encode(source)
        batch = ops.shape(source)[0]
        cache = self.decoder.empty_cache(batch, self.length)
        token = ops.full((batch, 1), BOS, "int32")
        outputs = []
        for step in range(self.length):
            hidden, cache = self.decoder(
                self._embed_target(token, start=step),
                memory,
                self_attention_cache=cache,
                self_attention_cache_update_index=step,
            )
            token = ops.cast(ops.argmax(self.logits(self.final_norm(hidden)), axis=-1), "int32")
            outputs.append(token)
        return ops.convert_to_numpy(ops.concatenate(outputs, axis=1))


def main(epochs=4, seed=0, vocab_size=12, length=8, train_count=6000, test_count=1000):
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    source, decoder_in, target = make_data(rng, train_count, vocab_size, length)
    model = Reverser(vocab_size, length)
    model.compile(
        optimizer=keras.optimizers.Adam(2e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    model.fit((source, decoder_in), target, epochs=epochs, batch_size=64, verbose=2)
    test_source, _, test_target = make_data(rng, test_count, vocab_size, length)
    predicted = model.generate(test_source)
    token_accuracy = float(np.mean(predicted == test_target))
    sequence_accuracy = float(np.mean(np.all(predicted == test_target, axis=1)))
    seconds = time.perf_counter() - start
    print(
        f"held-out {test_count} sequences of {length} tokens, greedy decoding with a cache: "
        f"token accuracy {token_accuracy:.3f}, sequence accuracy {sequence_accuracy:.3f} "
        f"({seconds:.0f} s in all)"
    )
    return {
        "token_accuracy": token_accuracy,
        "sequence_accuracy": sequence_accuracy,
        "seconds": seconds,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    main(epochs=arguments.epochs, seed=arguments.seed)
