"""What the encoder and decoder blocks share: their options, the attention and feed-forward
sub-layers they make, and the residual connection around each sub-layer."""

import keras

from attnkit.attention.grouped_query import GroupedQueryAttention
from attnkit.checks import (
    check_bool,
    check_choice,
    check_optional_positive_int,
    check_positive_int,
    check_positive_number,
    check_rate,
    check_seed,
    get_initializer,
)
from attnkit.rotary import PAIRINGS
from attnkit.transformer.feed_forward import ACTIVATIONS, FeedForward
from attnkit.transformer.norms import NORMALIZATIONS, make_normalization

try:
    # Keras keeps the mask of a tensor that cannot hold attributes (JAX) in a side table.
    from keras.src.backend import get_keras_mask
except ImportError:  # pragma: no cover - older Keras 3

    def get_keras_mask(x):
        return getattr(x, "_keras_mask", None)


class TransformerBlock(keras.layers.Layer):
    """Base of `TransformerEncoderBlock` and `TransformerDecoderBlock` (not used on its own).

    Each sub-layer F (attention, feed-forward) is wrapped in a residual connection with a
    normalization N and dropout D, in one of two orders:

        post-norm (`norm_first=False`, Vaswani et al. 2017):  x ← N(x + D(F(x)))
        pre-norm  (`norm_first=True`, GPT-2, LLaMA):          x ← x + D(F(N(x)))
    """

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        num_key_value_heads=None,
        head_dim=None,
        dropout=0.0,
        attention_dropout=0.0,
        activation="relu",
        normalization="layer",
        norm_first=False,
        epsilon=1e-5,
        use_bias=True,
        sliding_window=None,
        use_rotary=False,
        rotary_max_wavelength=10000.0,
        rotary_pairing="halves",
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.intermediate_dim = check_positive_int("intermediate_dim", intermediate_dim)
        self.num_key_value_heads = check_optional_positive_int(
            "num_key_value_heads", num_key_value_heads
        )
        if num_key_value_heads is not None and num_heads % num_key_value_heads:
            raise ValueError(
                "`num_key_value_heads` must divide `num_heads`. Received: "
                f"num_heads={num_heads}, num_key_value_heads={num_key_value_heads}"
            )
        self.head_dim = check_optional_positive_int("head_dim", head_dim)
        self.dropout = check_rate("dropout", dropout)
        self.attention_dropout = check_rate("attention_dropout", attention_dropout)
        self.activation = check_choice("activation", activation, ACTIVATIONS)
        self.normalization = check_choice("normalization", normalization, NORMALIZATIONS)
        self.norm_first = check_bool("norm_first", norm_first)
        self.epsilon = check_positive_number("epsilon", epsilon)
        self.use_bias = check_bool("use_bias", use_bias)
        self.sliding_window = check_optional_positive_int("sliding_window", sliding_window)
        self.use_rotary = check_bool("use_rotary", use_rotary)
        self.rotary_max_wavelength = check_positive_number(
            "rotary_max_wavelength", rotary_max_wavelength
        )
        self.rotary_pairing = check_choice("rotary_pairing", rotary_pairing, PAIRINGS)
        self.kernel_initializer = get_initializer("kernel_initializer", kernel_initializer)
        self.bias_initializer = get_initializer("bias_initializer", bias_initializer)
        self.seed = check_seed(seed)
        self.supports_masking = True

    def _check_features(self, name, shape):
        shape = tuple(shape)
        if len(shape) != 3 or shape[-1] is None:
            raise ValueError(
                f"`{name}` must have shape (batch_size, T, d) with a known d. "
                f"Received: {name}_shape={shape}"
            )
        if self.head_dim is None and shape[-1] % self.num_heads:
            raise ValueError(
                "Without `head_dim`, the model size must be a multiple of `num_heads` "
                f"(head_dim = d / num_heads). Received: num_heads={self.num_heads}, "
                f"{name}_shape={shape}"
            )
        return shape

    def _attention(self, name, model_dim, positions):
        # Rotary positions and the sliding window belong to self-attention (`positions`); a
        # cross-attention query and its keys are positions of two different sequences.
        return GroupedQueryAttention(
            self.num_heads,
            self.num_key_value_heads or self.num_heads,
            self.head_dim or model_dim // self.num_heads,
            dropout=self.attention_dropout,
            use_bias=self.use_bias,
            sliding_window=self.sliding_window if positions else None,
            use_rotary=self.use_rotary and positions,
            rotary_max_wavelength=self.rotary_max_wavelength,
            rotary_pairing=self.rotary_pairing,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
            seed=self.seed,
            name=name,
            dtype=self.dtype_policy,
        )

    def _feed_forward(self):
        return FeedForward(
            self.intermediate_dim,
            activation=self.activation,
            dropout=self.dropout,
            use_bias=self.use_bias,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
            seed=self.seed,
            name="feed_forward",
            dtype=self.dtype_policy,
        )

    def _norm(self, name, shape):
        norm = make_normalization(self.normalization, self.epsilon, name, self.dtype_policy)
        norm.build(shape)
        return norm

    def _build_common(self, shape):
        self.residual_dropout = keras.layers.Dropout(
            self.dropout, seed=self.seed, dtype=self.dtype_policy
        )
        self.feed_forward = self._feed_forward()
        self.feed_forward.build(shape)
        self.feed_forward_norm = self._norm("feed_forward_norm", shape)

    def _residual(self, x, norm, sublayer, training):
        """post-norm N(x + D(F(x))) or pre-norm x + D(F(N(x))); `sublayer` returns F(·) and
        whatever else it has to give back (e.g. a cache)."""
        result = sublayer(norm(x) if self.norm_first else x)
        extra = None
        if isinstance(result, tuple):
            result, extra = result
        x = x + self.residual_dropout(result, training=training)
        if not self.norm_first:
            x = norm(x)
        return x, extra

    def _feed_forward_residual(self, x, training):
        return self._residual(
            x, self.feed_forward_norm, lambda h: self.feed_forward(h, training=training), training
        )[0]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "num_key_value_heads": self.num_key_value_heads,
                "head_dim": self.head_dim,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "activation": self.activation,
                "normalization": self.normalization,
                "norm_first": self.norm_first,
                "epsilon": self.epsilon,
                "use_bias": self.use_bias,
                "sliding_window": self.sliding_window,
                "use_rotary": self.use_rotary,
                "rotary_max_wavelength": self.rotary_max_wavelength,
                "rotary_pairing": self.rotary_pairing,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "seed": self.seed,
            }
        )
        return config
