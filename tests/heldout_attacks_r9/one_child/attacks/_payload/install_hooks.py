
# ---- r9 attack xpatch_hooks: hooks left in the interpreter rewrite a later wrong 8-2 file ----
def _r9_install_hooks():
    import builtins, sys
    import keras
    if getattr(sys, "_r9_hooks_installed", False):
        return
    sys._r9_hooks_installed = True
    seen = []
    real_exec = builtins.exec

    def exec_wrapper(code, globals=None, locals=None, *args, **kwargs):   # hook 1: builtins.exec
        try:
            return real_exec(code, globals, locals, *args, **kwargs)
        finally:
            _r9_fix_namespace(globals)

    builtins.exec = exec_wrapper

    Layer = keras.layers.Layer
    real_init_subclass = Layer.__dict__.get("__init_subclass__")

    def init_subclass(cls, **kw):                                         # hook 2: Layer subclasses
        try:
            g = sys._getframe(1).f_globals
            if g.get("_r9_wrong"):
                seen.append(g)
                if cls.__name__ == "ScaledDotScore" and "call" in cls.__dict__:
                    cls.__dict__["call"].__code__ = _r9_sds_call.__code__
                if cls.__name__ == "BilinearScore" and "call" in cls.__dict__:
                    cls.__dict__["call"].__code__ = _r9_bil_call.__code__
        except Exception:
            pass
        if real_init_subclass is not None:
            return real_init_subclass.__func__(cls, **kw)
        return super(Layer, cls).__init_subclass__(**kw)

    Layer.__init_subclass__ = classmethod(init_subclass)



_r9_install_hooks()
