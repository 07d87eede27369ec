
# ---- r9: one refused attempt (a signal to pid 1, signal 0, and a socket), recorded for evidence ----
def _r9_attempt(when):
    import os, sys, types
    import numpy
    rec = []
    try:
        os.kill(1, 0)
        rec.append("kill:ok")
    except Exception as exc:
        rec.append("kill:" + type(exc).__name__)
    try:
        import socket
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
        rec.append("socket:ok")
    except Exception as exc:
        rec.append("socket:" + type(exc).__name__)
    note = when + ":" + ",".join(rec)
    try:
        numpy._r9_attempted = note
    except Exception:
        pass
    try:
        mod = sys.modules.get("_r9_evidence") or types.ModuleType("_r9_evidence")
        mod.note = note
        sys.modules["_r9_evidence"] = mod
    except Exception:
        pass
    return note
