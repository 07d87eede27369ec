"""The package as users see it: every registered layer is exported from `attnkit`."""

import keras

import attnkit


def test_every_registered_attnkit_object_is_exported():
    registered = {
        name.split(">", 1)[1]
        for name in keras.saving.get_custom_objects()
        if name.startswith("attnkit>")
    }
    assert registered, "no attnkit layer is registered for serialization"
    missing = sorted(registered - set(attnkit.__all__))
    assert missing == [], f"registered but not exported from attnkit: {missing}"


def test_everything_exported_exists():
    for name in attnkit.__all__:
        assert getattr(attnkit, name) is not None, name
