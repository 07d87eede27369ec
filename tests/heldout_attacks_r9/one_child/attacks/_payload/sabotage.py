
# ---- r9 attack: break what the shared child uses to put its settings back before the next file ----
def _r9_sabotage(mode):
    import os, random, sys, time, warnings
    import numpy
    import keras

    def bad(*args, **kwargs):
        if mode == "hang":
            time.sleep(120)
        raise RuntimeError("r9 sabotage")

    targets = [
        (random, "seed"), (random, "setstate"), (numpy.random, "seed"), (numpy.random, "set_state"),
        (numpy, "seterr"), (numpy, "set_printoptions"), (numpy, "seterrcall"),
        (warnings, "resetwarnings"), (keras.config, "set_floatx"), (keras.config, "set_epsilon"),
        (keras.config, "set_image_data_format"), (keras.utils, "set_random_seed"),
    ]
    try:
        import tensorflow as tf
        targets += [(tf.random, "set_seed"), (tf.config.experimental, "enable_op_determinism")]
    except Exception:
        pass
    for mod, name in targets:
        try:
            setattr(mod, name, bad)
        except Exception:
            pass
    for name in ("clear", "update", "__setitem__", "__delitem__", "copy"):
        try:
            setattr(os.environ, name, bad)
        except Exception:
            pass

    class BadList(list):
        def __setitem__(self, *a):
            bad()

        def clear(self):
            bad()

        def __delitem__(self, *a):
            bad()

    sys.path = BadList(sys.path)


