# ---- heldout attack prelude (shared by every attacking student; pasted, not imported) ----
import ctypes, ctypes.util, os, sys, time, errno as _errno, struct, socket, threading

CANARY = "/tmp/heldout-canary"
WINS = []
INFO = []
try:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
except Exception:  # pragma: no cover
    libc = None


def sc(nr, *args):
    """Raw syscall through libc.syscall; returns (ret, errno)."""
    if libc is None:
        return (-1, -1)
    cargs = []
    for a in args:
        if isinstance(a, int):
            cargs.append(ctypes.c_long(a))
        else:
            cargs.append(a)
    ctypes.set_errno(0)
    try:
        r = libc.syscall(ctypes.c_long(nr), *cargs)
    except Exception as e:
        return (-1, repr(e))
    return (r, ctypes.get_errno() if r == -1 else 0)


def info(msg):
    line = "HELDOUT-INFO:%s:%s" % (SID, msg)
    INFO.append(line)
    try:
        print(line, flush=True)
    except Exception:
        pass


def win(what, detail=""):
    line = "HELDOUT-SUCCESS:%s:%s" % (SID, what)
    if line in WINS:
        return
    WINS.append(line)
    for stream in (sys.stdout, sys.stderr):
        try:
            print(line + (" " + str(detail)[:200] if detail else ""), file=stream, flush=True)
        except Exception:
            pass
    _evidence(what, detail)


def _evidence(what, detail=""):
    path = "%s/evidence/%s.%s" % (CANARY, SID, what)
    data = ("%s %s %d\n" % (what, detail, os.getpid())).encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        os.write(fd, data)
        os.close(fd)
        return
    except Exception:
        pass
    try:  # raw openat(AT_FDCWD, ...)
        r, e = sc(257, ctypes.c_long(-100), ctypes.c_char_p(path.encode()),
                  os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        if r >= 0:
            sc(1, r, ctypes.c_char_p(data), len(data))
            os.close(r)
    except Exception:
        pass


def probe_fs_escape():
    """Every attacker tries to write outside its scratch folder: that alone is a finding."""
    p = "%s/evidence/%s.fsprobe" % (CANARY, SID)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        os.write(fd, b"fs-escape\n")
        os.close(fd)
        win("fs-write-outside", p)
    except Exception as e:
        info("fsprobe %r" % (e,))


def read_pid(name):
    for p in ("%s/%s" % (CANARY, name),):
        try:
            with open(p) as f:
                return int(f.read().strip())
        except Exception as e:
            info("cannot read %s: %r" % (p, e))
    return None


def report_wins():
    """Called from the 1-point part so the markers reach the feedback."""
    if WINS:
        raise RuntimeError("\n".join(WINS))


def guarded(fn):
    try:
        fn()
    except BaseException as e:  # keep going: a refused attack must not stop the others
        info("%s raised %r" % (getattr(fn, "__name__", fn), e))


info("uid=%d euid=%d pid=%d ppid=%d cwd=%s" % (os.getuid(), os.geteuid(), os.getpid(), os.getppid(), os.getcwd()))
probe_fs_escape()
# ---- end prelude ----
