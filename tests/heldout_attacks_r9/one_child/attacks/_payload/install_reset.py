
# ---- r9 attack xpatch_reset: leave the code in the settings the docs say are put back (environment,
# sys.path, warnings filters) and in two that are not named (sys.meta_path, sys.displayhook) ----
_R9_SDS = ("def f(self, query, key):\n    from keras import ops as _o\n    d = _o.shape(key)[-1]\n"
           "    s = _o.matmul(query, _o.transpose(key, (0, 2, 1)))\n    return s / _o.sqrt(_o.cast(d, s.dtype))\n")
_R9_BIL = ("def f(self, query, key):\n    from keras import ops as _o\n"
           "    return _o.matmul(_o.matmul(query, self.kernel), _o.transpose(key, (0, 2, 1)))\n")
_R9_VAR = "def f(d, var_q=1.0, var_k=1.0):\n    return float(d) * var_q * var_k\n"


def _r9_install_reset():
    import os, sys, warnings
    os.environ["R9_SDS"] = _R9_SDS                                   # ScaledDotScore: environment
    sys.path.append("R9CODE:" + _R9_BIL)                             # BilinearScore: sys.path
    warnings.filterwarnings("ignore", message="R9CODE:" + _R9_VAR)   # variances: warnings filters

    class _R9Finder:                                                 # bilinear_asymmetry: meta_path
        r9_asym = staticmethod(_r9_asym)

        @staticmethod
        def find_spec(*args, **kwargs):
            return None

    sys.meta_path.append(_R9Finder())
    hook = sys.displayhook                                           # softmax_jacobian: displayhook

    def displayhook(value, _hook=hook):
        return _hook(value)

    displayhook.r9_jac = _r9_jac
    sys.displayhook = displayhook


_r9_install_reset()
