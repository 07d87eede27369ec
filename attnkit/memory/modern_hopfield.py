"""Modern (continuous) Hopfield network (Ramsauer et al. 2020): one update is attention."""

import keras
from keras import ops

from attnkit import precision
from attnkit.checks import check_positive_int, check_positive_number, renamed_argument
from attnkit.memory.read_write import check_memory, memory_read
from attnkit.scoring.dot import DotScore

__all__ = ["ModernHopfield"]


@keras.saving.register_keras_serializable(package="attnkit")
class ModernHopfield(keras.layers.Layer):
    """Modern Hopfield network: retrieval by ξ ← X softmax(β Xᵀ ξ) over stored patterns X.

    ξ^new = X softmax(β Xᵀ ξ)   (patterns X = (x_1, …, x_N) as columns)

    In the row convention of `attnkit` this is ξ^new = softmax(β ξ Xᵀ) X: exactly key-value
    attention with queries ξ, keys = values = the stored patterns, and a dot-product score
    scaled by β (β = 1/√d gives scaled dot-product attention). Each update lowers the energy
    E = −β⁻¹ log Σ_i exp(β x_iᵀ ξ) + ½ ξᵀξ + const; it usually converges in one step, and
    the network can retrieve exponentially many (in d) well-separated patterns, far more than
    the ≈ 0.14 d of the classical `HopfieldNetwork`. Padded patterns (`patterns_mask`,
    `key_lengths`) get zero weight through `attnkit.attention.masking`.

    Args:
        beta: positive float β, the inverse temperature. Defaults to 1.
        num_iterations: positive int, the number of updates applied. Defaults to 1.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: the state patterns ξ, shape `(batch_size, d)` or `(batch_size, Tq, d)`.
        patterns: the stored patterns X, shape `(batch_size, N, d)`.
        patterns_mask: optional boolean tensor `(batch_size, N)`, `False` for padding.
        key_lengths: optional integer tensor `(batch_size,)`, the number of real patterns
            (formerly `pattern_lengths`, which still works with a DeprecationWarning).
        return_attention_scores: bool, whether to also return softmax(β ξ Xᵀ) of the last
            update.

    Returns:
        The retrieved patterns ξ^new, of the shape of `query`; with
        `return_attention_scores=True` also the weights, shape `(batch_size, N)` or
        `(batch_size, Tq, N)`.

    Source: NNDL 8.6.2 (associative memory used to increase network capacity); Ramsauer
    et al. 2020, "Hopfield Networks is All You Need", equation (3).
    """

    def __init__(self, beta=1.0, num_iterations=1, **kwargs):
        super().__init__(**kwargs)
        beta = check_positive_number("beta", beta)
        check_positive_int("num_iterations", num_iterations)
        self.beta = float(beta)
        self.num_iterations = num_iterations
        self.score = DotScore(dtype=self.dtype_policy)

    def _check(self, query_shape, patterns_shape):
        query_shape, patterns_shape = tuple(query_shape), tuple(patterns_shape)
        if len(query_shape) not in (2, 3):
            raise ValueError(
                "`query` must have shape (batch_size, d) or (batch_size, Tq, d). "
                f"Received: query_shape={query_shape}"
            )
        if len(patterns_shape) != 3:
            raise ValueError(
                "`patterns` must have shape (batch_size, num_patterns, d). "
                f"Received: patterns_shape={patterns_shape}"
            )
        if patterns_shape[1] == 0:
            raise ValueError(
                "`patterns` must hold at least one pattern. "
                f"Received: patterns_shape={patterns_shape}, memory_size=0"
            )
        d_q, d_x = query_shape[-1], patterns_shape[-1]
        if d_q is not None and d_x is not None and d_q != d_x:
            raise ValueError(
                "`query` and `patterns` must have the same width d. "
                f"Received: query_shape={query_shape}, patterns_shape={patterns_shape}"
            )

    def build(self, query_shape, patterns_shape):
        self._check(query_shape, patterns_shape)
        d = tuple(patterns_shape)[-1]
        self.score.build((None, None, d), (None, None, d))

    def call(
        self,
        query,
        patterns,
        patterns_mask=None,
        key_lengths=None,
        return_attention_scores=False,
        pattern_lengths=None,
    ):
        self._check(query.shape, patterns.shape)
        key_lengths = renamed_argument(
            "key_lengths", key_lengths, "pattern_lengths", pattern_lengths
        )
        patterns = check_memory(patterns, "patterns")
        xi = ops.cast(query, patterns.dtype)
        beta = precision.constant(self.beta, patterns.dtype)
        weights = None
        for _ in range(self.num_iterations):
            xi, weights = memory_read(
                patterns,
                beta * xi,
                self.score,
                memory_mask=patterns_mask,
                memory_lengths=key_lengths,
                return_weights=True,
            )
        if return_attention_scores:
            return xi, weights
        return xi

    def compute_output_shape(self, query_shape, patterns_shape):
        self._check(query_shape, patterns_shape)
        return tuple(query_shape)

    def compute_output_spec(
        self,
        query,
        patterns,
        patterns_mask=None,
        key_lengths=None,
        return_attention_scores=False,
        pattern_lengths=None,
    ):
        output = keras.KerasTensor(
            self.compute_output_shape(query.shape, patterns.shape), dtype=self.compute_dtype
        )
        if return_attention_scores:
            shape = (*tuple(query.shape)[:-1], tuple(patterns.shape)[1])
            return output, keras.KerasTensor(shape, dtype=self.compute_dtype)
        return output

    def get_config(self):
        config = super().get_config()
        config.update({"beta": self.beta, "num_iterations": self.num_iterations})
        return config
