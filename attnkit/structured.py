"""Structured attention: a linear-chain CRF over binary selection variables (Kim 2017)."""

import keras
from keras import ops

from attnkit import precision
from attnkit.attention import masking
from attnkit.attention.scored import attention_output_spec, check_same_positions
from attnkit.checks import get_initializer
from attnkit.scoring.base import work_dtype
from attnkit.scoring.registry import resolve_score

__all__ = ["StructuredAttention"]


def _pairwise_logsumexp(message, transition):
    """out(z) = log Σ_z' exp(message(z') + transition[z', z]); message (..., 2)."""
    return ops.logsumexp(ops.expand_dims(message, -1) + transition, axis=-2)


@keras.saving.register_keras_serializable(package="attnkit")
class StructuredAttention(keras.layers.Layer):
    """Structured (segmentation) attention: CRF marginals over binary z_i as the weights.

    Each query q defines a linear-chain conditional random field over binary selection
    variables z_1, ..., z_n, one per input x_i (the keys):

        p(z | x, q) ∝ exp(Σ_i θ_i(z_i) + Σ_i A[z_i, z_{i+1}]),
        θ_i(1) = s(q, k_i),  θ_i(0) = 0,

    with s any score function (unary potentials) and A a learned 2 x 2 matrix of pairwise
    potentials (the weight `transition`, initialised to zeros, where the marginals are
    sigmoid(s(q, k_i))). The attention weights are the marginals

        α_i = p(z_i = 1 | x, q),   c = Σ_i α_i v_i,

    computed exactly by the forward-backward algorithm in log space (`logsumexp`), so they
    are differentiable and do not overflow. Unlike a softmax, the α_i do not sum to 1: each
    lies in [0, 1] and several inputs (a segment) can be selected at once.

    Masked keys (Keras mask of `value`, `value_mask`, `key_lengths`, `attention_mask`) are
    removed from the chain: their neighbours on either side are linked directly, and their
    weight is exactly 0; a query with no key left gets zero weights and a zero output, never
    NaN. The recursions run in float32 under mixed precision. They run over the keys with
    `keras.ops.scan`, O(Tk) sequential steps.

    Args:
        score: the unary score s(q, k): a layer instance, a name accepted by
            `attnkit.scoring.get_score` (`"dot"`, `"scaled_dot"`, `"bilinear"`, `"cosine"`)
            or a layer config dict. Defaults to `"bilinear"`.
        transition_initializer: initializer of the 2 x 2 pairwise potentials A, indexed
            `[z_i, z_{i+1}]`. Defaults to `"zeros"`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: tensor of shape `(batch_size, Tq, d_q)`.
        value: tensor of shape `(batch_size, Tk, d_v)`.
        key: optional tensor of shape `(batch_size, Tk, d_k)`; defaults to `value`.
        query_mask: optional boolean tensor `(batch_size, Tq)`; `False` rows get zero weights.
        value_mask: optional boolean tensor `(batch_size, Tk)`, `False` for padded keys.
            Filled in from a Keras mask carried by `value`.
        key_lengths: optional integer tensor `(batch_size,)`, the number of valid keys.
        attention_mask: optional boolean tensor `(batch_size, Tq, Tk)` or `(Tq, Tk)`.
        return_attention_scores: bool, whether to also return the marginals α.

    Returns:
        The output c of shape `(batch_size, Tq, d_v)`, and, when
        `return_attention_scores=True`, also the marginals α of shape
        `(batch_size, Tq, Tk)`.

    Source: NNDL 8.2.1.4 "结构化注意力" (attention as a context-dependent binary
    distribution, a graphical model); Kim, Denton, Hoang and Rush 2017, "Structured Attention
    Networks", §3.2 segmentation attention (linear-chain CRF, forward-backward marginals).
    """

    def __init__(self, score="bilinear", transition_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        self.score_layer = resolve_score(score, "score", dtype=self.dtype_policy)
        self.transition_initializer = get_initializer(
            "transition_initializer", transition_initializer
        )

    def build(self, query_shape, value_shape, key_shape=None):
        query_shape, value_shape = tuple(query_shape), tuple(value_shape)
        key_shape = value_shape if key_shape is None else tuple(key_shape)
        if len(query_shape) != 3 or len(value_shape) != 3 or len(key_shape) != 3:
            raise ValueError(
                "`query`, `value` and `key` must have shape (batch_size, T, d). "
                f"Received: query_shape={query_shape}, value_shape={value_shape}, "
                f"key_shape={key_shape}"
            )
        check_same_positions(value_shape, key_shape)
        if not self.score_layer.built:
            self.score_layer.build(query_shape, key_shape)
        self.transition = self.add_weight(
            name="transition", shape=(2, 2), initializer=self.transition_initializer
        )

    def marginals(self, unary, keep):
        """p(z_i = 1) of the chains, by forward-backward in log space.

        Args:
            unary: float tensor `(B, Tq, Tk)`, θ_i(1) (θ_i(0) = 0).
            keep: boolean tensor `(B, Tq, Tk)`, the positions that belong to the chain.

        Returns:
            Tensor `(B, Tq, Tk)` of marginals, 0 where `keep` is `False`.
        """
        dtype = unary.dtype
        transition = ops.cast(self.transition, dtype)
        # One time-major tensor per position i: [θ_i(0), θ_i(1), keep_i] (a single `xs`
        # keeps `ops.scan` working when Tk is only known at run time).
        steps = ops.stack([ops.zeros_like(unary), unary, ops.cast(keep, dtype)], axis=-1)
        steps = ops.transpose(steps, (2, 0, 1, 3))  # (Tk, B, Tq, 3)
        zeros = ops.zeros_like(steps[0, ..., :2])  # (B, Tq, 2)
        none_yet = ops.zeros_like(keep[..., 0])  # (B, Tq) bool

        def forward(carry, step):
            # carry: (α of the last kept position, whether one was seen).
            alpha, seen = carry
            theta_i, keep_i = step[..., :2], ops.cast(step[..., 2], "bool")
            incoming = ops.where(
                ops.expand_dims(seen, -1), _pairwise_logsumexp(alpha, transition), zeros
            )
            new_alpha = ops.where(ops.expand_dims(keep_i, -1), theta_i + incoming, alpha)
            new = (new_alpha, ops.logical_or(seen, keep_i))
            return new, new

        (alpha_last, _), (alphas, _) = ops.scan(forward, (zeros, none_yet), steps)

        def backward(carry, step):
            # carry: (γ, β_{i+1}) with γ(z) = log Σ_z' exp(A[z, z'] + θ_j(z') + β_j(z')),
            # j the next kept position (γ = 0 when there is none); β_i = γ.
            gamma, _ = carry
            theta_i, keep_i = step[..., :2], ops.cast(step[..., 2], "bool")
            outgoing = ops.logsumexp(
                transition + ops.expand_dims(theta_i + gamma, -2), axis=-1
            )  # (B, Tq, 2): log Σ_z' exp(A[z, z'] + θ_i(z') + β_i(z'))
            new_gamma = ops.where(ops.expand_dims(keep_i, -1), outgoing, gamma)
            new = (new_gamma, gamma)
            return new, new

        _, (_, betas) = ops.scan(backward, (zeros, zeros), steps, reverse=True)
        log_z = ops.logsumexp(alpha_last, axis=-1)  # (B, Tq)
        log_marginal = alphas[..., 1] + betas[..., 1] - ops.expand_dims(log_z, 0)
        log_marginal = ops.transpose(log_marginal, (1, 2, 0))  # (B, Tq, Tk)
        fill = ops.cast(masking.large_negative_number(dtype), dtype)
        # `where` before `exp`: masked positions never reach `exp`, nor their gradients.
        return ops.exp(ops.where(keep, log_marginal, fill))

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_lengths=None,
        attention_mask=None,
        return_attention_scores=False,
    ):
        if key is None:
            key = value
        dtype = work_dtype(self.compute_dtype)
        unary = ops.cast(self.score_layer(query, key), dtype)  # (B, Tq, Tk)
        mask = masking.Masks(query_mask, value_mask, key_lengths, attention_mask).keep(query, key)
        keep = ops.ones_like(unary, "bool")
        if mask is not None:
            keep = ops.logical_and(keep, mask)
        weights = ops.cast(self.marginals(unary, keep), self.compute_dtype)
        output = precision.matmul(weights, ops.cast(value, self.compute_dtype))
        if return_attention_scores:
            return output, weights
        return output

    def compute_mask(self, query, previous_mask=None, **kwargs):
        return previous_mask

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        return (*tuple(query_shape)[:-1], tuple(value_shape)[-1])

    def compute_output_spec(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_lengths=None,
        attention_mask=None,
        return_attention_scores=False,
    ):
        return attention_output_spec(
            self, query, value, key, return_attention_scores, lambda q, k: (*q[:-1], k[-2])
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "score": keras.saving.serialize_keras_object(self.score_layer),
                "transition_initializer": keras.initializers.serialize(self.transition_initializer),
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("score"), dict):
            config["score"] = resolve_score(config["score"], "score")
        return super().from_config(config)
