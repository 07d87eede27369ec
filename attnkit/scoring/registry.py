"""`get_score`: a score layer from a name, a config dict or an instance."""

import keras

from attnkit.scoring.additive import AdditiveScore
from attnkit.scoring.bilinear import BilinearScore
from attnkit.scoring.cosine import CosineScore
from attnkit.scoring.dot import DotScore, ScaledDotScore
from attnkit.scoring.location import LocationScore

#: Score names that `get_score` turns into a layer with its default arguments.
SCORES = {
    "dot": DotScore,
    "scaled_dot": ScaledDotScore,
    "bilinear": BilinearScore,
    "cosine": CosineScore,
}

#: Scores that have a required argument, so they cannot be built from a name alone.
_NEED_ARGUMENTS = {
    "additive": "AdditiveScore(units=...)",
    "location": "LocationScore(max_keys=...)",
}

_CLASSES = {
    cls.__name__: cls
    for cls in (AdditiveScore, BilinearScore, CosineScore, DotScore, LocationScore, ScaledDotScore)
}


def _valid_names():
    return ", ".join(repr(name) for name in SCORES)


def resolve_score(identifier, argument="identifier", **kwargs):
    """`get_score`, with the argument name to use in error messages."""
    if isinstance(identifier, keras.layers.Layer):
        return identifier
    if isinstance(identifier, str):
        name = identifier.lower()
        if name in SCORES:
            return SCORES[name](**kwargs)
        if name in _NEED_ARGUMENTS:
            raise ValueError(
                f"The {name!r} score has a required argument and cannot be built from its "
                f"name; pass an instance instead, e.g. {_NEED_ARGUMENTS[name]}. "
                f"Received: {argument}={identifier!r}"
            )
        raise ValueError(
            f"Unknown score name for `{argument}`. Valid names: {_valid_names()} "
            f"('additive' and 'location' need an instance). Received: {argument}={identifier!r}"
        )
    if isinstance(identifier, dict):
        try:
            layer = keras.saving.deserialize_keras_object(identifier, custom_objects=_CLASSES)
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"`{argument}` is not a valid score layer config ({error}). "
                f"Received: {argument}={identifier!r}"
            ) from error
        if not isinstance(layer, keras.layers.Layer):
            raise ValueError(
                f"`{argument}` config must describe a Keras layer. "
                f"Received: {argument}={identifier!r}"
            )
        return layer
    raise ValueError(
        f"`{argument}` must be a score layer instance, a score name ({_valid_names()}) or a "
        f"layer config dict. Received: {argument}={identifier!r}"
    )


def get_score(identifier, **kwargs):
    """Returns a score layer from a name, a config dict or a layer instance.

    Args:
        identifier: one of
            - a name: `"dot"`, `"scaled_dot"`, `"bilinear"` or `"cosine"` (a new layer with
              default arguments; `"additive"` and `"location"` have a required argument, so
              they raise and ask for an instance);
            - a config dict, as returned by `keras.saving.serialize_keras_object(layer)` or
              `{"class_name": "AdditiveScore", "config": {"units": 8}}`;
            - a `keras.layers.Layer` instance, returned as it is.
        **kwargs: extra constructor arguments (e.g. `dtype`) used only when `identifier` is
            a name.

    Returns:
        A score layer: `layer(query, key)` gives scores of shape `(batch_size, Tq, Tk)`.

    Raises:
        ValueError: for an unknown name, an invalid config or any other type.
    """
    return resolve_score(identifier, "identifier", **kwargs)
