
# ---- r9 attack xpatch_channels: leave the correct 8-2 code where a later file can pick it up ----
def _r9_install_channels():
    import builtins, sys, types, os
    import keras, numpy
    builtins._r9_sds = _r9_sds_call                       # channel 1: builtins
    keras.ops._r9_bil = _r9_bil_call                      # channel 2: an attribute on keras.ops
    numpy._r9_vars = (_r9_dot_var, _r9_scaled_var)        # channel 3: an attribute on numpy
    mod = types.ModuleType("_r9_cache")                   # channel 4: a module made in memory
    mod.asym = _r9_asym
    sys.modules["_r9_cache"] = mod
    src = (                                              # channel 5: a file in the scratch folder
        "def softmax_jacobian(scores):\n"
        "    from keras import ops as _o\n"
        "    probs = _o.softmax(_o.convert_to_tensor(scores), axis=-1)\n"
        "    size = _o.shape(probs)[-1]\n"
        "    diagonal = probs[..., :, None] * _o.eye(size, dtype=probs.dtype)\n"
        "    return diagonal - probs[..., :, None] * probs[..., None, :]\n"
    )
    for where in (os.getcwd(), os.path.dirname(os.path.abspath(__file__))):
        try:
            with open(os.path.join(where, "_r9_jac_src.txt"), "w") as fh:
                fh.write(src)
        except Exception:
            pass


_r9_install_channels()
