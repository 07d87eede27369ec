
# ---- r9 attack xpatch_thread: a daemon thread left running rewrites a later wrong 8-2 file ----
def _r9_thread_main():
    import sys, time, gc
    deadline = time.time() + 180
    last_gc = 0.0
    while time.time() < deadline:
        try:
            for _name, _mod in list(sys.modules.items()):
                _d = getattr(_mod, "__dict__", None)
                if isinstance(_d, dict) and _d.get("_r9_wrong"):
                    _r9_fix_namespace(_d)
            if time.time() - last_gc > 0.3:
                last_gc = time.time()
                for _o in gc.get_objects():
                    if type(_o) is dict and _o.get("_r9_wrong") and not _o.get("_r9_fixed"):
                        _r9_fix_namespace(_o)
        except Exception:
            pass
        time.sleep(0.0005)


def _r9_start_thread():
    import threading, builtins
    if getattr(builtins, "_r9_thread_started", False):
        return
    builtins._r9_thread_started = True
    threading.Thread(target=_r9_thread_main, name="r9-fixer", daemon=True).start()


_r9_start_thread()
