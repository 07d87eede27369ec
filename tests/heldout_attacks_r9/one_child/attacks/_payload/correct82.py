
# ---- r9 payload: correct 8-2 code, kept for "later" exercises of this student ----
def _r9_sds_call(self, query, key):
    from keras import ops as _o
    depth = _o.shape(key)[-1]
    scores = _o.matmul(query, _o.transpose(key, (0, 2, 1)))
    return scores / _o.sqrt(_o.cast(depth, scores.dtype))


def _r9_bil_call(self, query, key):
    from keras import ops as _o
    projected = _o.matmul(query, self.kernel)
    return _o.matmul(projected, _o.transpose(key, (0, 2, 1)))


def _r9_dot_var(d, var_q=1.0, var_k=1.0):
    return float(d) * var_q * var_k


def _r9_scaled_var(d, var_q=1.0, var_k=1.0):
    return float(d) * var_q * var_k / float(d)


def _r9_asym(W):
    from keras import ops as _o
    W = _o.convert_to_tensor(W)
    return W - _o.transpose(W)


def _r9_jac(scores):
    from keras import ops as _o
    probs = _o.softmax(_o.convert_to_tensor(scores), axis=-1)
    size = _o.shape(probs)[-1]
    diagonal = probs[..., :, None] * _o.eye(size, dtype=probs.dtype)
    return diagonal - probs[..., :, None] * probs[..., None, :]


_R9_FIX = {
    "dot_product_variance": _r9_dot_var,
    "scaled_dot_product_variance": _r9_scaled_var,
    "bilinear_asymmetry": _r9_asym,
    "softmax_jacobian": _r9_jac,
}


def _r9_fix_namespace(ns):
    """Rewrite a wrong 8-2 namespace (marked _r9_wrong) with the correct code, in place:
    the functions' code objects are swapped, so references taken before still run the fix."""
    try:
        if not isinstance(ns, dict) or not ns.get("_r9_wrong") or ns.get("_r9_fixed"):
            return False
        done = 0
        for name, fn in _R9_FIX.items():
            obj = ns.get(name)
            if obj is not None and getattr(obj, "__code__", None) is not fn.__code__:
                obj.__code__ = fn.__code__
            if obj is not None:
                done += 1
        for cname, fn in (("ScaledDotScore", _r9_sds_call), ("BilinearScore", _r9_bil_call)):
            cls = ns.get(cname)
            if cls is not None:
                cur = cls.__dict__.get("call")
                if cur is not None and getattr(cur, "__code__", None) is not fn.__code__:
                    cur.__code__ = fn.__code__
                done += 1
        if done == 6:
            ns["_r9_fixed"] = True
        return True
    except Exception:
        return False
