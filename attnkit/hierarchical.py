"""Hierarchical attention network: words -> sentences -> document (Yang et al. 2016)."""

import keras
from keras import ops

from attnkit import precision
from attnkit.attention import masking
from attnkit.checks import check_positive_int, get_initializer
from attnkit.scoring.dot import DotScore

__all__ = ["HierarchicalAttention"]


def _check_inputs_shape(inputs_shape, with_embedding):
    inputs_shape = tuple(inputs_shape)
    if with_embedding and len(inputs_shape) != 3:
        raise ValueError(
            "With `vocab_size`, `inputs` must be token ids of shape "
            f"(batch_size, sentences, words). Received: inputs_shape={inputs_shape}"
        )
    if not with_embedding and (len(inputs_shape) != 4 or inputs_shape[-1] is None):
        raise ValueError(
            "Without `vocab_size`, `inputs` must be embeddings of shape "
            f"(batch_size, sentences, words, d). Received: inputs_shape={inputs_shape}"
        )
    return inputs_shape


@keras.saving.register_keras_serializable(package="attnkit")
class HierarchicalAttention(keras.layers.Layer):
    """Hierarchical attention network: word attention, then sentence attention.

    For sentence i with words w_it (t = 1..W) and the sentences of a document (i = 1..S):

        h_it = BiGRU_word(x_it)                      word encoder, per sentence
        u_it = tanh(W_w h_it + b_w),  α_it = softmax_t(u_itᵀ u_w),  s_i = Σ_t α_it h_it
        h_i  = BiGRU_sentence(s_i)                   sentence encoder, per document
        u_i  = tanh(W_s h_i + b_s),   α_i  = softmax_i(u_iᵀ u_s),   v   = Σ_i α_i h_i

    u_w and u_s are learned context vectors (the queries: "which words / sentences are
    informative?"), scored with `DotScore`. Both softmaxes go through
    `attnkit.attention.masking.masked_softmax` (float32 under mixed precision): padded words
    get zero weight, a sentence with no word is masked out of the sentence attention, and a
    document with no word gives zero weights and a zero vector, never NaN. Pad words and
    sentences at the end (the GRUs skip masked steps, and cuDNN needs right padding).

    Args:
        units: positive int, the size of each GRU direction (h_it and h_i have 2·units).
        vocab_size: optional positive int. When given, the inputs are token ids and the
            layer owns an embedding (id 0 is padding); when `None`, the inputs are
            embeddings.
        embedding_dim: positive int, the size of the embedding; required with `vocab_size`.
        attention_units: positive int, the size of u_it, u_i and the context vectors.
            Defaults to `2 * units`.
        context_initializer: initializer of the context vectors u_w and u_s. Defaults to
            `"glorot_uniform"`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: token ids `(batch_size, sentences, words)` (with `vocab_size`; 0 is
            padding) or embeddings `(batch_size, sentences, words, d)` (without).
        mask: optional boolean tensor `(batch_size, sentences, words)`, `False` for padded
            words. For token ids it is combined with `inputs != 0`.
        return_attention_scores: bool, whether to also return the word and sentence weights.
        training: bool, passed to the GRUs.

    Returns:
        The document vector v of shape `(batch_size, 2 * units)`; and, when
        `return_attention_scores=True`, also the word weights α_it of shape
        `(batch_size, sentences, words)` and the sentence weights α_i of shape
        `(batch_size, sentences)`.

    Source: NNDL 8.2.1.4 (hierarchical attention over words, sentences and documents);
    Yang, Yang, Dyer, He, Smola and Hovy 2016, "Hierarchical Attention Networks for Document
    Classification", §2.2.
    """

    def __init__(
        self,
        units,
        vocab_size=None,
        embedding_dim=None,
        attention_units=None,
        context_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("units", units)
        if vocab_size is not None:
            check_positive_int("vocab_size", vocab_size)
            if embedding_dim is None:
                raise ValueError(
                    "`embedding_dim` is required when `vocab_size` is given. "
                    f"Received: embedding_dim={embedding_dim!r}"
                )
            check_positive_int("embedding_dim", embedding_dim)
        elif embedding_dim is not None:
            raise ValueError(
                "`embedding_dim` is only used with `vocab_size` (token-id inputs). "
                f"Received: embedding_dim={embedding_dim!r}"
            )
        if attention_units is not None:
            check_positive_int("attention_units", attention_units)
        self.units = units
        self.vocab_size = vocab_size
        self.embedding_dim = embedding_dim
        self.attention_units = attention_units
        self.context_initializer = get_initializer("context_initializer", context_initializer)
        policy = self.dtype_policy
        size = attention_units or 2 * units
        self.embedding = None
        if vocab_size is not None:
            self.embedding = keras.layers.Embedding(
                vocab_size, embedding_dim, dtype=policy, name="embedding"
            )
        self.word_encoder = keras.layers.Bidirectional(
            keras.layers.GRU(
                units,
                activation=precision.recurrent_tanh(policy),
                return_sequences=True,
                dtype=policy,
            ),
            dtype=policy,
            name="word_encoder",
        )
        self.word_projection = precision.Dense(
            size, activation="tanh", dtype=policy, name="word_projection"
        )
        self.sentence_encoder = keras.layers.Bidirectional(
            keras.layers.GRU(
                units,
                activation=precision.recurrent_tanh(policy),
                return_sequences=True,
                dtype=policy,
            ),
            dtype=policy,
            name="sentence_encoder",
        )
        self.sentence_projection = precision.Dense(
            size, activation="tanh", dtype=policy, name="sentence_projection"
        )
        self.score = DotScore(dtype=policy, name="score")

    def build(self, inputs_shape):
        inputs_shape = _check_inputs_shape(inputs_shape, self.vocab_size is not None)
        if self.embedding is not None:
            self.embedding.build(inputs_shape)
            features = self.embedding_dim
        else:
            features = inputs_shape[-1]
        size = self.attention_units or 2 * self.units
        self.word_encoder.build((None, inputs_shape[2], features))
        self.word_projection.build((None, inputs_shape[2], 2 * self.units))
        self.sentence_encoder.build((inputs_shape[0], inputs_shape[1], 2 * self.units))
        self.sentence_projection.build((inputs_shape[0], inputs_shape[1], 2 * self.units))
        self.score.build((None, 1, size), (None, None, size))
        self.word_context = self.add_weight(
            name="word_context", shape=(size,), initializer=self.context_initializer
        )
        self.sentence_context = self.add_weight(
            name="sentence_context", shape=(size,), initializer=self.context_initializer
        )

    def _attend(self, states, projection, context, keep):
        """Attention with a learned context vector: (B, T, 2u) -> (B, 2u), weights (B, T)."""
        u = projection(states)  # (B, T, size)
        query = ops.zeros_like(u[:, :1]) + ops.cast(context, u.dtype)  # (B, 1, size)
        scores = ops.cast(self.score(query, u), self.compute_dtype)  # (B, 1, T)
        mask = masking.attention_mask(query, u, key_mask=keep)
        weights = masking.masked_softmax(scores, mask)
        return ops.squeeze(precision.matmul(weights, states), 1), ops.squeeze(weights, 1)

    def call(self, inputs, mask=None, return_attention_scores=False, training=None):
        if self.embedding is not None:
            keep = ops.not_equal(inputs, 0)
            x = self.embedding(inputs)
        else:
            keep = ops.ones(ops.shape(inputs)[:-1], "bool")
            x = inputs
        if mask is not None:
            keep = ops.logical_and(keep, ops.cast(mask, "bool"))
        x = ops.cast(x, self.compute_dtype)
        shape = ops.shape(x)
        batch, sentences, words = shape[0], shape[1], shape[2]
        # Word level: every sentence of every document is one sequence.
        flat_keep = ops.reshape(keep, (-1, words))
        word_states = self.word_encoder(
            ops.reshape(x, (-1, words, shape[3])), mask=flat_keep, training=training
        )
        sentence_vectors, word_weights = self._attend(
            word_states, self.word_projection, self.word_context, flat_keep
        )
        sentence_vectors = ops.reshape(sentence_vectors, (batch, sentences, 2 * self.units))
        word_weights = ops.reshape(word_weights, (batch, sentences, words))
        # Sentence level: a sentence without any word is padding.
        sentence_keep = ops.any(keep, axis=-1)
        sentence_states = self.sentence_encoder(
            sentence_vectors, mask=sentence_keep, training=training
        )
        document, sentence_weights = self._attend(
            sentence_states, self.sentence_projection, self.sentence_context, sentence_keep
        )
        if return_attention_scores:
            return document, word_weights, sentence_weights
        return document

    def compute_mask(self, inputs, previous_mask=None):
        return None

    def compute_output_shape(self, inputs_shape):
        inputs_shape = _check_inputs_shape(inputs_shape, self.vocab_size is not None)
        return (inputs_shape[0], 2 * self.units)

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False, training=None):
        shape = tuple(inputs.shape)
        document = keras.KerasTensor(self.compute_output_shape(shape), dtype=self.compute_dtype)
        if return_attention_scores:
            return (
                document,
                keras.KerasTensor(shape[:3], dtype=self.compute_dtype),
                keras.KerasTensor(shape[:2], dtype=self.compute_dtype),
            )
        return document

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "vocab_size": self.vocab_size,
                "embedding_dim": self.embedding_dim,
                "attention_units": self.attention_units,
                "context_initializer": keras.initializers.serialize(self.context_initializer),
            }
        )
        return config
