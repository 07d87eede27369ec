"""End-to-end memory network (Sukhbaatar et al. 2015): multi-hop reading of a read-only memory."""

import keras
from keras import ops

from attnkit import precision
from attnkit.attention import masking
from attnkit.checks import (
    check_bool,
    check_choice,
    check_optional_positive_int,
    check_positive_int,
    get_initializer,
    renamed_argument,
)
from attnkit.memory.read_write import memory_read
from attnkit.scoring.dot import DotScore

__all__ = ["EndToEndMemoryNetwork", "position_encoding"]

_TYING = ("adjacent", "layerwise")
_ENCODINGS = ("bow", "position")
_ACTIVATIONS = ("softmax", None)


def position_encoding(sentence_length, embedding_dim, dtype="float32"):
    """The position-encoding weights of Sukhbaatar et al. 2015, §4.1.

    l_kj = (1 − j/J) − (k/d)(1 − 2j/J),  j = 1..J (word position), k = 1..d (embedding unit)

    A sentence is then represented by m_i = Σ_j l_j ⊙ A x_ij instead of the bag of words
    Σ_j A x_ij, so that word order matters.

    Args:
        sentence_length: int J, the (padded) number of words per sentence.
        embedding_dim: int d.
        dtype: dtype of the result.

    Returns:
        Tensor of shape `(sentence_length, embedding_dim)`.
    """
    j = ops.cast(ops.arange(1, sentence_length + 1), dtype)[:, None]
    k = ops.cast(ops.arange(1, embedding_dim + 1), dtype)[None, :]
    length = ops.cast(sentence_length, dtype)
    return (1.0 - j / length) - (k / embedding_dim) * (1.0 - 2.0 * j / length)


@keras.saving.register_keras_serializable(package="attnkit")
class EndToEndMemoryNetwork(keras.layers.Layer):
    """End-to-end memory network (MemN2N): K hops of attention over a read-only memory.

    Each sentence x_i of the story is embedded twice, as an addressing memory a_i (matrix A)
    and an output memory c_i (matrix C); the question is embedded as q^(1) (matrix B). Hop k:

        p_i^(k) = softmax_i(a_i^(k)ᵀ q^(k)),   r^(k) = Σ_i p_i^(k) c_i^(k)
        q^(k+1) = r^(k) + q^(k)        (or H q^(k) + r^(k) with `use_hop_projection=True`)

    and the answer is y = f(W (q^(K) + r^(K))) with f = softmax. A sentence is embedded as a
    bag of words a_i = Σ_j A x_ij, or with position encoding a_i = Σ_j l_j ⊙ A x_ij
    (`position_encoding`); with temporal encoding a_i += T_A(i) and c_i += T_C(i), where i is
    the memory slot index (slot 0 is the first sentence).

    Weight tying (§2.2 of the paper):
    - `"adjacent"`: A^(k+1) = C^(k), B = A^(1), W = C^(K)ᵀ; K + 1 embedding matrices
      `embedding_0 … embedding_K`, and `temporal_0 … temporal_K` with temporal encoding. The
      answer vocabulary is the word vocabulary.
    - `"layerwise"`: A^(1) = … = A^(K), C^(1) = … = C^(K) (an RNN-like network); separate
      `embedding_a`, `embedding_c`, `embedding_b`, `temporal_a`, `temporal_c` and an
      `answer_kernel` W of shape `(embedding_dim, vocab_size)`.

    Token 0 is padding: padded words contribute nothing, and a memory slot whose words are all
    padding is masked (zero attention weight) through `attnkit.attention.masking`, together
    with the optional `memory_mask` and `key_lengths`.

    Args:
        vocab_size: positive int V, the number of token ids (including the padding id 0).
        embedding_dim: positive int d.
        hops: positive int K, the number of memory hops. Defaults to 3.
        weight_tying: `"adjacent"` (default) or `"layerwise"`.
        temporal_encoding: bool, whether to add the learned temporal encodings T_A, T_C.
        memory_size: optional positive int, the largest number of memory slots; needed for
            temporal encoding (defaults to the story length seen in `build`).
        sentence_encoding: `"bow"` (bag of words, default) or `"position"`.
        use_hop_projection: bool, whether the update between hops is q ← H q + r with a
            learned `hop_kernel` H of shape `(d, d)` (the paper's layer-wise variant), instead
            of q ← q + r. Defaults to False.
        activation: `"softmax"` (default) for answer probabilities, or None for logits.
        embeddings_initializer: initializer of every embedding, temporal and answer matrix.
            Defaults to `RandomNormal(stddev=0.1)`, as in the paper.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        story: integer tensor of shape `(batch_size, memory_slots, sentence_length)`, the
            token ids of the sentences (0 = padding).
        question: integer tensor of shape `(batch_size, question_length)`.
        memory_mask: optional boolean tensor `(batch_size, memory_slots)`, `False` for padded
            slots (combined with the slots that are all padding).
        key_lengths: optional integer tensor `(batch_size,)`, the number of real slots
            (formerly `memory_lengths`, which still works with a DeprecationWarning).
        return_attention_scores: bool, whether to also return the attention of every hop.

    Returns:
        Answer probabilities (or logits) of shape `(batch_size, vocab_size)`; with
        `return_attention_scores=True` also the hop attention p of shape
        `(batch_size, hops, memory_slots)`.

    Source: NNDL 8.5.1 (end-to-end memory network); Sukhbaatar et al. 2015.
    """

    def __init__(
        self,
        vocab_size,
        embedding_dim,
        hops=3,
        weight_tying="adjacent",
        temporal_encoding=False,
        memory_size=None,
        sentence_encoding="bow",
        use_hop_projection=False,
        activation="softmax",
        embeddings_initializer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("embedding_dim", embedding_dim)
        check_positive_int("hops", hops)
        check_choice("weight_tying", weight_tying, _TYING)
        check_bool("temporal_encoding", temporal_encoding)
        check_optional_positive_int("memory_size", memory_size)
        check_choice("sentence_encoding", sentence_encoding, _ENCODINGS)
        check_bool("use_hop_projection", use_hop_projection)
        check_choice("activation", activation, _ACTIVATIONS)
        if embeddings_initializer is None:
            embeddings_initializer = keras.initializers.RandomNormal(stddev=0.1)
        self.vocab_size = vocab_size
        self.embedding_dim = embedding_dim
        self.hops = hops
        self.weight_tying = weight_tying
        self.temporal_encoding = temporal_encoding
        self.memory_size = memory_size
        self.sentence_encoding = sentence_encoding
        self.use_hop_projection = use_hop_projection
        self.activation = activation
        self.embeddings_initializer = get_initializer(
            "embeddings_initializer", embeddings_initializer
        )
        self.score = DotScore(dtype=self.dtype_policy)

    # ------------------------------------------------------------------------ weights
    def _matrix(self, name, rows):
        return self.add_weight(
            name=name,
            shape=(rows, self.embedding_dim),
            initializer=self.embeddings_initializer,
        )

    def build(self, story_shape, question_shape):
        story_shape, question_shape = tuple(story_shape), tuple(question_shape)
        self._check_shapes(story_shape, question_shape)
        slots = self.memory_size
        if self.temporal_encoding:
            if slots is None:
                slots = story_shape[1]
            if slots is None:
                raise ValueError(
                    "Temporal encoding needs `memory_size` when the number of memory slots is "
                    f"not known when the layer is built. Received: story_shape={story_shape}"
                )
        self._slots = slots
        v, d = self.vocab_size, self.embedding_dim
        if self.weight_tying == "adjacent":
            self.embeddings = [self._matrix(f"embedding_{k}", v) for k in range(self.hops + 1)]
            if self.temporal_encoding:
                self.temporals = [
                    self._matrix(f"temporal_{k}", slots) for k in range(self.hops + 1)
                ]
        else:
            self.embedding_a = self._matrix("embedding_a", v)
            self.embedding_c = self._matrix("embedding_c", v)
            self.embedding_b = self._matrix("embedding_b", v)
            if self.temporal_encoding:
                self.temporal_a = self._matrix("temporal_a", slots)
                self.temporal_c = self._matrix("temporal_c", slots)
            self.answer_kernel = self.add_weight(
                name="answer_kernel", shape=(d, v), initializer=self.embeddings_initializer
            )
        if self.use_hop_projection:
            self.hop_kernel = self.add_weight(
                name="hop_kernel", shape=(d, d), initializer=self.embeddings_initializer
            )
        self.score.build((None, None, d), (None, None, d))

    def _check_shapes(self, story_shape, question_shape):
        if len(story_shape) != 3:
            raise ValueError(
                "`story` must have shape (batch_size, memory_slots, sentence_length). "
                f"Received: story_shape={story_shape}"
            )
        if len(question_shape) != 2:
            raise ValueError(
                "`question` must have shape (batch_size, question_length). "
                f"Received: question_shape={question_shape}"
            )
        if story_shape[1] == 0:
            raise ValueError(
                "`story` must have at least one memory slot. "
                f"Received: story_shape={story_shape}, memory_size=0"
            )
        slots = getattr(self, "_slots", None) or self.memory_size
        if (
            self.temporal_encoding
            and slots is not None
            and story_shape[1] is not None
            and story_shape[1] > slots
        ):
            raise ValueError(
                f"The story has more memory slots than `memory_size`={slots}. "
                f"Received: story_shape={story_shape}"
            )

    def _hop_weights(self, k):
        """(A, C, T_A, T_C) of hop k (0-based)."""
        if self.weight_tying == "adjacent":
            t = getattr(self, "temporals", None)
            return (
                self.embeddings[k],
                self.embeddings[k + 1],
                None if t is None else t[k],
                None if t is None else t[k + 1],
            )
        return (
            self.embedding_a,
            self.embedding_c,
            getattr(self, "temporal_a", None),
            getattr(self, "temporal_c", None),
        )

    # -------------------------------------------------------------------------- call
    def _embed(self, tokens, matrix):
        """Σ_j (l_j ⊙) E x_j over the last token axis; padding (id 0) contributes nothing."""
        dtype = self.compute_dtype
        vectors = ops.take(ops.cast(matrix, dtype), tokens, axis=0)
        keep = ops.cast(ops.not_equal(tokens, 0), dtype)
        vectors = vectors * ops.expand_dims(keep, -1)
        if self.sentence_encoding == "position":
            length = tokens.shape[-1]
            if length is None:
                length = ops.shape(tokens)[-1]
            vectors = vectors * position_encoding(length, self.embedding_dim, dtype)
        return ops.sum(vectors, axis=-2)

    def _memory(self, story, matrix, temporal):
        memory = self._embed(story, matrix)
        if temporal is not None:
            slots = ops.shape(story)[1]
            memory = memory + ops.cast(temporal, self.compute_dtype)[None, :slots]
        return memory

    def call(
        self,
        story,
        question,
        memory_mask=None,
        key_lengths=None,
        return_attention_scores=False,
        memory_lengths=None,
    ):
        self._check_shapes(tuple(story.shape), tuple(question.shape))
        key_lengths = renamed_argument("key_lengths", key_lengths, "memory_lengths", memory_lengths)
        story = ops.cast(story, "int32")
        question = ops.cast(question, "int32")
        slot_mask = ops.any(ops.not_equal(story, 0), axis=-1)
        if memory_mask is not None:
            memory_mask = ops.convert_to_tensor(memory_mask)
            if len(memory_mask.shape) != 2:
                raise ValueError(
                    "`memory_mask` must have shape (batch_size, memory_slots). "
                    f"Received: memory_mask with shape {tuple(memory_mask.shape)}"
                )
        slot_mask = masking.combine_masks(slot_mask, memory_mask)

        embedding_b = self.embeddings[0] if self.weight_tying == "adjacent" else self.embedding_b
        q = self._embed(question, embedding_b)
        attention = []
        for k in range(self.hops):
            matrix_a, matrix_c, temporal_a, temporal_c = self._hop_weights(k)
            keys = self._memory(story, matrix_a, temporal_a)
            values = self._memory(story, matrix_c, temporal_c)
            r, p = memory_read(
                values,
                q,
                self.score,
                keys=keys,
                memory_mask=slot_mask,
                memory_lengths=key_lengths,
                return_weights=True,
            )
            attention.append(p)
            if k < self.hops - 1:
                if self.use_hop_projection:
                    q = precision.matmul(q, ops.cast(self.hop_kernel, self.compute_dtype)) + r
                else:
                    q = q + r
        final = q + r
        if self.weight_tying == "adjacent":
            answer = ops.transpose(ops.cast(self.embeddings[-1], self.compute_dtype))
        else:
            answer = ops.cast(self.answer_kernel, self.compute_dtype)
        output = precision.matmul(final, answer)
        if self.activation == "softmax":
            output = masking.masked_softmax(output)
        if return_attention_scores:
            return output, ops.stack(attention, axis=1)
        return output

    def compute_output_shape(self, story_shape, question_shape):
        return (tuple(story_shape)[0], self.vocab_size)

    def compute_output_spec(
        self,
        story,
        question,
        memory_mask=None,
        key_lengths=None,
        return_attention_scores=False,
        memory_lengths=None,
    ):
        self._check_shapes(tuple(story.shape), tuple(question.shape))
        output = keras.KerasTensor(
            self.compute_output_shape(story.shape, question.shape), dtype=self.compute_dtype
        )
        if return_attention_scores:
            attention = keras.KerasTensor(
                (story.shape[0], self.hops, story.shape[1]), dtype=self.compute_dtype
            )
            return output, attention
        return output

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocab_size": self.vocab_size,
                "embedding_dim": self.embedding_dim,
                "hops": self.hops,
                "weight_tying": self.weight_tying,
                "temporal_encoding": self.temporal_encoding,
                "memory_size": self.memory_size,
                "sentence_encoding": self.sentence_encoding,
                "use_hop_projection": self.use_hop_projection,
                "activation": self.activation,
                "embeddings_initializer": keras.initializers.serialize(self.embeddings_initializer),
            }
        )
        return config
