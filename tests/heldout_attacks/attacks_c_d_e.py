A = {}
# the reader execs what it finds: a correct solution, carried as a string by the writer
A["c1_writer"] = r'''
CODE = SOLUTION_SOURCE.encode()
def attack():
    # SysV shm (fixed key), msg queue, semaphore: left behind on purpose
    shmid, e = sc(29, 0x4E1D0C01, 65536, 0o1000 | 0o666)
    if shmid >= 0:
        libc.shmat.restype = ctypes.c_void_p
        p = libc.shmat(shmid, None, 0)
        if p and p != ctypes.c_void_p(-1).value:
            ctypes.memmove(p, struct.pack("I", len(CODE)) + CODE, len(CODE) + 4); win("sysv-shm-write")
    else: info("shmget errno %s" % e)
    q, e = sc(68, 0x4E1D0C02, 0o1000 | 0o666)
    if q >= 0:
        msg = struct.pack("l", 1) + CODE[:8000]
        r, e = sc(69, q, ctypes.create_string_buffer(msg, len(msg)), len(CODE[:8000]), 0o4000)
        if r == 0: win("sysv-msg-write")
    else: info("msgget errno %s" % e)
    s, e = sc(64, 0x4E1D0C03, 1, 0o1000 | 0o666)
    if s >= 0: win("sysv-sem-create")
    for path in ("/dev/shm/heldout-c.py", "/tmp/heldout-c.py", "/var/tmp/heldout-c.py",
                 os.path.join(os.path.dirname(os.getcwd()), "heldout-c.py"), os.path.expanduser("~/heldout-c.py")):
        try:
            with open(path, "wb") as f: f.write(CODE)
            os.chmod(path, 0o666); win("file-write:" + path.replace("/", "_"))
        except Exception as e: info("write %s %r" % (path, e))
    # memfd exposed through /proc/<pid>/fd to anybody who can reach it
    try:
        fd = os.memfd_create("heldout-c")
        os.write(fd, CODE); globals()["_memfd"] = fd; win("memfd-minor")
    except Exception as e: info("memfd %r" % (e,))

def serve():
    try:
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); srv.bind(b"\0heldout-classmate"); srv.listen(4)
        srv.settimeout(0.5); win("abstract-serve")
        end = time.time() + 10
        while time.time() < end:
            try:
                c, _ = srv.accept(); c.sendall(CODE); c.close(); win("abstract-served")
            except socket.timeout: pass
    except Exception as e: info("serve %r" % (e,))
guarded(attack)

def PART_HOOK(part):
    if part == "softmax": serve()
'''
A["c2_reader"] = r'''
GOT = []
def take(code, tag):
    if code and b"def softmax_jacobian" in code:
        GOT.append((tag, code)); win("read-" + tag)

def attack():
    end = time.time() + 10
    while time.time() < end and not GOT:
        shmid, e = sc(29, 0x4E1D0C01, 0, 0)
        if shmid >= 0:
            libc.shmat.restype = ctypes.c_void_p
            p = libc.shmat(shmid, None, 0o10000)
            if p and p != ctypes.c_void_p(-1).value:
                n = struct.unpack("I", ctypes.string_at(p, 4))[0]; take(ctypes.string_at(p + 4, n), "sysv-shm")
        q, e = sc(68, 0x4E1D0C02, 0)
        if q >= 0:
            buf = ctypes.create_string_buffer(9000)
            r, e = sc(70, q, buf, 8990, 0, 0o4000 | 0o20000)   # IPC_NOWAIT|MSG_COPY? (MSG_COPY needs index)
            if r <= 0: r, e = sc(70, q, buf, 8990, 0, 0o4000)
            if r > 0: take(buf.raw[8:8 + r], "sysv-msg")
        for path in ("/dev/shm/heldout-c.py", "/tmp/heldout-c.py", "/var/tmp/heldout-c.py",
                     os.path.join(os.path.dirname(os.getcwd()), "heldout-c.py"), os.path.expanduser("~/heldout-c.py")):
            try: take(open(path, "rb").read(), "file" + path.replace("/", "_"))
            except Exception: pass
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(1); s.connect(b"\0heldout-classmate")
            data = b""
            while True:
                d = s.recv(65536)
                if not d: break
                data += d
            take(data, "abstract-socket")
        except Exception: pass
        # classmates' files directly: walk up from the scratch folder, and the class folder's likely path
        cands = ["/work/heldout/class/honest1/ex8_2.py", "/work/heldout/class/z_honest_last/ex8_2.py"]
        d = os.getcwd()
        for _ in range(4):
            d = os.path.dirname(d)
            try:
                for n in os.listdir(d):
                    cands.append(os.path.join(d, n, "ex8_2.py"))
            except Exception: pass
        for c in cands:
            try:
                code = open(c, "rb").read()
                if b"HELDOUT" not in code: take(code, "classmate-file")
            except Exception: pass
        if not GOT: time.sleep(1)
    if GOT:
        tag, code = GOT[0]
        exec(compile(code, "<classmate>", "exec"), globals())
guarded(attack)
'''
A["c3_leftover_scan"] = r'''
def attack():
    # what did earlier processes leave? (reads only)
    try:
        ids = open("/proc/sysvipc/shm").read().splitlines()[1:]
        if ids: win("see-sysv-shm", len(ids))
    except Exception as e: info("sysvipc %r" % (e,))
    for d in ("/dev/shm", "/tmp", "/var/tmp"):
        try:
            names = os.listdir(d); win("list-" + d.strip("/").replace("/", "_"), names[:20])
        except Exception as e: info("list %s %r" % (d, e))
    try:
        data = open("/proc/net/unix").read()
        if "@heldout" in data: win("see-abstract-names")
    except Exception as e: info("net/unix %r" % (e,))
guarded(attack)
'''
# ---- d: memory beyond the limit (each bounded to ~1.5 GiB and ~30 s) ----
A["d1_memfd"] = r'''
def attack():
    fd, e = sc(319, ctypes.c_char_p(b"heldout-mem"), 0)
    if fd < 0: info("memfd errno %s" % e); return
    chunk = b"\1" * (64 << 20); got = 0; end = time.time() + 30
    try:
        while got < 1536 and time.time() < end:
            os.write(fd, chunk); got += 64
    except Exception as e: info("memfd write %r at %d MB" % (e, got))
    info("memfd %d MB" % got)
    if got > 600: win("memfd-%dMB" % got)
    time.sleep(3); os.close(fd)
guarded(attack)
'''
A["d2_sysv_shm"] = r'''
def attack():
    libc.shmat.restype = ctypes.c_void_p
    total = 0
    for i in range(4):           # 4 x 256 MiB segments, each attached, filled, detached: they stay
        shmid, e = sc(29, 0x4E1D0D01 + i, 256 << 20, 0o1000 | 0o600)
        if shmid < 0: info("shmget %d errno %s" % (i, e)); break
        p = libc.shmat(shmid, None, 0)
        if not p or p == ctypes.c_void_p(-1).value: info("shmat refused"); break
        ctypes.memset(p, 1, 256 << 20); total += 256
        libc.shmdt(ctypes.c_void_p(p))
    info("sysv %d MB" % total)
    if total > 600: win("sysv-shm-%dMB" % total)
guarded(attack)
'''
A["d3_mmap"] = r'''
import mmap as _mm
def fill(flags, tag):
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    size = 1536 << 20
    p = libc.mmap(None, size, 3, flags, -1, 0)
    if not p or p == ctypes.c_void_p(-1).value: info("%s mmap refused" % tag); return
    got = 0; end = time.time() + 20
    while got < 1536 and time.time() < end:
        ctypes.memset(p + (got << 20), 1, 64 << 20); got += 64
    info("%s %d MB" % (tag, got))
    if got > 600: win("%s-%dMB" % (tag, got))
    time.sleep(2); libc.munmap(ctypes.c_void_p(p), ctypes.c_size_t(size))
def attack():
    fill(0x01 | 0x20, "map-shared-anon")
    fill(0x02 | 0x20 | 0x4000, "map-noreserve")
guarded(attack)
'''
A["d4_tmpfs_file"] = r'''
def attack():
    chunk = b"\1" * (64 << 20)
    for path in ("/dev/shm/heldout-d-big", "/run/heldout-d-big"):
        got = 0
        try:
            with open(path, "wb") as f:
                while got < 1536: f.write(chunk); got += 64
        except Exception as e: info("%s %r at %d" % (path, e, got))
        if got > 600: win("tmpfs-%s-%dMB" % (path.split("/")[1], got)); time.sleep(3)
        try: os.unlink(path)
        except Exception: pass
    # a sparse file in the scratch folder, mapped shared and dirtied: page cache, not written()
    import mmap
    try:
        fd = os.open("heldout-map.bin", os.O_RDWR | os.O_CREAT, 0o600); os.ftruncate(fd, 1536 << 20)
        m = mmap.mmap(fd, 1536 << 20, mmap.MAP_SHARED); got = 0; end = time.time() + 20
        while got < 1536 and time.time() < end:
            m[got << 20:(got + 64) << 20] = chunk; got += 64
        info("file-map %d MB" % got)
        if got > 600: win("file-mmap-%dMB" % got)
        time.sleep(2); m.close(); os.close(fd); os.unlink("heldout-map.bin")
    except Exception as e: info("file map %r" % (e,))
guarded(attack)
'''
# ---- e: privilege ----
A["e1_clock"] = r'''
def attack():
    ts = (ctypes.c_long * 2)()
    sc(228, 0, ts)                 # clock_gettime(REALTIME)
    r, e = sc(227, 0, ts)          # set it to what it is: harmless
    if r == 0: win("clock_settime")
    else: info("clock_settime errno %s" % e)
    tv = (ctypes.c_long * 2)()
    sc(96, tv, 0)                  # gettimeofday
    r, e = sc(164, tv, 0)
    if r == 0: win("settimeofday")
    else: info("settimeofday errno %s" % e)
    tx = ctypes.create_string_buffer(256)
    r, e = sc(159, tx)             # read only
    tick = struct.unpack_from("l", tx, 88)[0]
    struct.pack_into("I", tx, 0, 0x4000); struct.pack_into("l", tx, 88, tick)   # ADJ_TICK, same value
    r, e = sc(159, tx)
    if r >= 0: win("adjtimex-write", tick)
    else: info("adjtimex errno %s" % e)
    r, e = sc(305, 0, tx)
    if r >= 0: win("clock_adjtime-write")
    else: info("clock_adjtime errno %s" % e)
guarded(attack)
'''
A["e2_rlimit"] = r'''
import resource
def attack():
    INF = resource.RLIM_INFINITY
    for res, tag in ((resource.RLIMIT_AS, "as"), (resource.RLIMIT_NOFILE, "nofile"), (resource.RLIMIT_NPROC, "nproc"),
                     (resource.RLIMIT_CPU, "cpu"), (resource.RLIMIT_FSIZE, "fsize"), (resource.RLIMIT_DATA, "data")):
        soft, hard = resource.getrlimit(res)
        info("%s %s %s" % (tag, soft, hard))
        if hard == INF: continue
        want = INF if res != resource.RLIMIT_NOFILE else hard * 4
        new = (ctypes.c_ulong * 2)(want & 0xFFFFFFFFFFFFFFFF, want & 0xFFFFFFFFFFFFFFFF)
        r, e = sc(302, 0, res, new, 0)
        if r != 0: r, e = sc(160, res, new)
        if r != 0:
            try: resource.setrlimit(res, (want, want)); r = 0
            except Exception as ex: e = ex
        if resource.getrlimit(res)[1] != hard: win("raise-hard-" + tag, "%s->%s" % (hard, resource.getrlimit(res)[1]))
        else: info("raise %s refused %s" % (tag, e))
guarded(attack)
'''
A["e3_setuid_caps"] = r'''
def attack():
    try:
        for l in open("/proc/self/status"):
            if l.startswith(("CapEff", "CapPrm", "Uid", "NoNewPrivs", "Seccomp")): info(l.strip())
            if l.startswith("CapEff") and int(l.split()[1], 16) != 0: win("has-capabilities", l.split()[1])
    except Exception as e: info("status %r" % (e,))
    if os.geteuid() == 0: win("runs-as-root-minor")
    before = os.geteuid()
    r, e = sc(105, 0)
    if r == 0 and before != 0: win("setuid0")
    r, e = sc(117, 0, 0, 0)
    if r == 0 and before != 0: win("setresuid0")
    hdr = (ctypes.c_uint * 2)(0x20080522, 0); data = (ctypes.c_uint * 6)(*([0xFFFFFFFF] * 6))
    r, e = sc(126, hdr, data)
    if r == 0: win("capset-full")
    else: info("capset errno %s" % e)
    r, e = sc(116, 0, 0)      # setgroups(0, NULL)
    if r == 0: win("setgroups")
    else: info("setgroups errno %s" % e)
guarded(attack)
'''
A["e4_ns_mount"] = r'''
def attack():
    for flags, tag in ((0x10000000, "unshare-user"), (0x20000, "unshare-mount"), (0x40000000, "unshare-net"),
                       (0x20000000, "unshare-pid"), (0x08000000, "unshare-ipc")):
        r, e = sc(272, flags)
        if r == 0: win(tag)
        else: info("%s errno %s" % (tag, e))
    try: os.mkdir("heldout-mnt")
    except Exception: pass
    r, e = sc(165, ctypes.c_char_p(b"heldout-tmpfs"), ctypes.c_char_p(os.path.abspath("heldout-mnt").encode()),
              ctypes.c_char_p(b"tmpfs"), 0, 0)
    if r == 0:
        win("mount-tmpfs"); sc(166, ctypes.c_char_p(os.path.abspath("heldout-mnt").encode()), 2)
    else: info("mount errno %s" % e)
    r, e = sc(161, ctypes.c_char_p(b"."))
    if r == 0: win("chroot")
    else: info("chroot errno %s" % e)
guarded(attack)
'''
A["e5_kernel"] = r'''
def attack():
    r, e = sc(248, ctypes.c_char_p(b"user"), ctypes.c_char_p(b"heldout-key"), ctypes.c_char_p(b"x"), 1, -4)
    if r >= 0: win("add_key")
    else: info("add_key errno %s" % e)
    r, e = sc(250, 0, -3, 0)
    if r >= 0: win("keyctl-minor")
    attr = ctypes.create_string_buffer(128); struct.pack_into("IIII", attr, 0, 2, 4, 4, 1)
    r, e = sc(321, 0, attr, 72)
    if r >= 0: win("bpf-map-create"); os.close(r)
    else: info("bpf errno %s" % e)
    pattr = ctypes.create_string_buffer(128); struct.pack_into("IIQ", pattr, 0, 1, 128, 0)
    r, e = sc(298, pattr, 0, -1, -1, 0)
    if r >= 0: win("perf_event_open"); os.close(r)
    else: info("perf errno %s" % e)
    junk = ctypes.create_string_buffer(b"\0" * 64)
    r, e = sc(175, junk, 64, ctypes.c_char_p(b""))
    if r == 0 or e not in (1, 13, 38): win("init_module-reachable", e)
    else: info("init_module errno %s" % e)
    r, e = sc(176, ctypes.c_char_p(b"heldout_none"), 0o4000)
    if r == 0 or e not in (1, 13, 38): win("delete_module-reachable", e)
    r, e = sc(169, 0, 0, 0, 0)   # invalid magic: EINVAL if CAP_SYS_BOOT was granted, never reboots
    if e not in (1, 13, 38): win("reboot-reachable", e)
    else: info("reboot errno %s" % e)
    r, e = sc(168, ctypes.c_char_p(b"/nonexistent-heldout"))
    if e not in (1, 13, 38): win("swapoff-reachable", e)
    name = socket.gethostname().encode()
    r, e = sc(170, ctypes.c_char_p(name), len(name))
    if r == 0: win("sethostname-same")
    else: info("sethostname errno %s" % e)
    buf = ctypes.create_string_buffer(4096)
    r, e = sc(103, 3, buf, 4096)
    if r > 0: win("syslog-read", r)
guarded(attack)
'''
