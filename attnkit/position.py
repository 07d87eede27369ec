"""Position information for self-attention: NNDL 8.3; Vaswani et al. 2017, section 3.5.

Self-attention weights depend only on the contents q_i, k_j, not on where they are:
permuting the input sequence permutes the output the same way. These layers add a vector
that depends on the position to every input vector, so that order matters.
"""

import keras
from keras import ops

from attnkit.checks import (
    check_optional_positive_int,
    check_positive_int,
    check_positive_number,
    get_initializer,
)

__all__ = ["LearnedPositionEmbedding", "SinusoidalPositionEncoding"]


def _check_input_shape(layer, input_shape):
    """Validates `(batch_size, T, d)` and a static T against `layer.max_length`."""
    input_shape = tuple(input_shape)
    if len(input_shape) != 3:
        raise ValueError(
            f"{type(layer).__name__} expects inputs of shape (batch_size, T, d). "
            f"Received: input_shape={input_shape}"
        )
    length = input_shape[-2]
    if layer.max_length is not None and length is not None and length > layer.max_length:
        raise ValueError(
            f"The sequence is longer than `max_length`: {type(layer).__name__} was made with "
            f"max_length={layer.max_length}. Received: input_shape={input_shape} "
            f"(sequence length {length})"
        )
    return input_shape


@keras.saving.register_keras_serializable(package="attnkit")
class SinusoidalPositionEncoding(keras.layers.Layer):
    """Adds the fixed sinusoidal position encoding of the Transformer to a sequence.

    PE[pos, 2i] = sin(pos / 10000^(2i/d)),  PE[pos, 2i+1] = cos(pos / 10000^(2i/d)),
    output = X + PE

    Column j of the encoding is a sinusoid of wavelength 2π · 10000^(2⌊j/2⌋/d): the
    wavelengths grow geometrically from 2π to 2π · 10000 (`max_wavelength`), and for any
    offset k, PE[pos + k] is a linear function of PE[pos]. For an odd d the last column is
    a sine (column d − 1 = 2i with i = (d − 1)/2). The encoding has no weights and is
    defined for any position; it is computed in float32 and added in the compute dtype.
    The input's Keras mask passes through.

    Args:
        max_length: optional positive int; when given, a sequence whose static length is
            larger raises a ValueError (a guard, e.g. to match a learned embedding).
        max_wavelength: positive float, the 10000 of the formula.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: tensor of shape `(batch_size, T, d)`.

    Returns:
        `inputs + PE[:T]`, of shape `(batch_size, T, d)`.

    Source: NNDL 8.3 (position encoding); Vaswani et al. 2017, section 3.5.
    """

    def __init__(self, max_length=None, max_wavelength=10000.0, **kwargs):
        super().__init__(**kwargs)
        self.max_length = check_optional_positive_int("max_length", max_length)
        self.max_wavelength = check_positive_number("max_wavelength", max_wavelength, finite=False)
        self.supports_masking = True

    def build(self, input_shape):
        _check_input_shape(self, input_shape)

    def encoding(self, length, depth):
        """The table PE of shape `(length, depth)`, float32."""
        positions = ops.cast(ops.arange(length), "float32")[:, None]  # pos
        columns = ops.arange(depth)
        pairs = ops.cast(columns // 2 * 2, "float32")  # 2i for the columns 2i and 2i + 1
        inverse_wavelengths = ops.power(self.max_wavelength, -pairs / ops.cast(depth, "float32"))
        angles = positions * inverse_wavelengths[None, :]
        return ops.where(columns[None, :] % 2 == 0, ops.sin(angles), ops.cos(angles))

    def call(self, inputs):
        _check_input_shape(self, inputs.shape)
        table = self.encoding(ops.shape(inputs)[-2], inputs.shape[-1] or ops.shape(inputs)[-1])
        return inputs + ops.cast(table, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return _check_input_shape(self, input_shape)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(self.compute_output_shape(inputs.shape), dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"max_length": self.max_length, "max_wavelength": self.max_wavelength})
        return config


@keras.saving.register_keras_serializable(package="attnkit")
class LearnedPositionEmbedding(keras.layers.Layer):
    """Adds a learned vector per position to a sequence.

    output[b, pos] = X[b, pos] + P[pos],  P a weight of shape `(max_length, d)`

    The alternative to the sinusoidal encoding that Vaswani et al. found to work as well
    (and BERT and GPT use): one free vector per position, learned with the rest of the
    model. It cannot handle sequences longer than `max_length`: a sequence whose static
    length is larger raises a ValueError (a longer sequence whose length is only known at
    run time fails in the slice). The input's Keras mask passes through.

    Args:
        max_length: positive int, the number of positions that have an embedding.
        embeddings_initializer: initializer of `embeddings`. Defaults to
            `"glorot_uniform"`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: tensor of shape `(batch_size, T, d)`, T <= `max_length`.

    Returns:
        `inputs + P[:T]`, of shape `(batch_size, T, d)`.

    Source: NNDL 8.3 (position encoding); Vaswani et al. 2017, section 3.5 (learned
    positional embeddings).
    """

    def __init__(self, max_length, embeddings_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        check_positive_int("max_length", max_length)
        self.max_length = max_length
        self.embeddings_initializer = get_initializer(
            "embeddings_initializer", embeddings_initializer
        )
        self.supports_masking = True

    def build(self, input_shape):
        input_shape = _check_input_shape(self, input_shape)
        if input_shape[-1] is None:
            raise ValueError(
                "The last dimension of the inputs must be known. "
                f"Received: input_shape={input_shape}"
            )
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.max_length, input_shape[-1]),
            initializer=self.embeddings_initializer,
        )

    def call(self, inputs):
        _check_input_shape(self, inputs.shape)
        length = ops.shape(inputs)[-2]
        embeddings = ops.convert_to_tensor(self.embeddings)
        table = ops.slice(embeddings, (0, 0), (length, self.embeddings.shape[-1]))
        return inputs + ops.cast(table, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return _check_input_shape(self, input_shape)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(self.compute_output_shape(inputs.shape), dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "max_length": self.max_length,
                "embeddings_initializer": keras.initializers.serialize(self.embeddings_initializer),
            }
        )
        return config
