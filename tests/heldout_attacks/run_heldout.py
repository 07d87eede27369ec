#!/usr/bin/env python3
"""Held-out red-team runner for `grader batch`.

    python run_heldout.py                 # one batch as root, table + totals
    python run_heldout.py --kill-grader   # SIGKILL the grader 15 s in, look for leftovers 30 s later
    python run_heldout.py --as-user NAME  # run the batch as an ordinary user (created if missing)
    python run_heldout.py --only a1_unix_path,honest1   # a subset of the class (plus every honest one)

Sets up canaries (listeners, victims, victim/secret files, world-writable evidence folder), runs
grader batch, then judges each student of MANIFEST.json: BLOCKED / SUCCEEDED / UNCLEAR. Exit 0.
"""
import argparse, csv, glob, json, os, pwd, re, select, shutil, signal, socket, subprocess, sys, tempfile
import threading, time, xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
CLASS = os.path.join(HERE, "class")
CANARY = "/tmp/heldout-canary"
TCP_PORT, UDP_PORT = 47931, 47932
SECRET = "HELDOUT-SECRET-%d" % os.getpid()
VICTIM_SECRET = "HELDOUT-VICTIM-ENV-%d" % os.getpid()
VICTIM_CONTENT = "HELDOUT-VICTIM-CONTENT-%d = (\n" % os.getpid()
GRADER = shutil.which("grader") or "/root/.pyenv/versions/3.11.7/bin/grader"

sys.path.insert(0, HERE)


# ---------------------------------------------------------------- canaries
class Listeners:
    def __init__(self):
        self.hits = []          # (channel, first bytes)
        self.socks = []
        self.stop = False

    def add(self, fam, typ, addr, name):
        s = socket.socket(fam, typ)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(addr)
        if typ == socket.SOCK_STREAM:
            s.listen(64)
        self.socks.append((s, typ, name))
        return s

    def start(self):
        if os.path.exists(CANARY + "/ui.sock"):
            os.unlink(CANARY + "/ui.sock")
        self.add(socket.AF_UNIX, socket.SOCK_STREAM, CANARY + "/ui.sock", "unix-path")
        os.chmod(CANARY + "/ui.sock", 0o777)
        self.add(socket.AF_UNIX, socket.SOCK_STREAM, b"\0heldout-abstract", "abstract")
        self.add(socket.AF_UNIX, socket.SOCK_DGRAM, b"\0heldout-abstract-dg", "abstract-dgram")
        self.add(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", TCP_PORT), "tcp4")
        self.add(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", UDP_PORT), "udp4")
        try:
            self.add(socket.AF_INET6, socket.SOCK_STREAM, ("::1", TCP_PORT), "tcp6")
        except OSError:
            pass
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        conns = {}
        while not self.stop:
            rl = [s for s, _, _ in self.socks] + list(conns)
            try:
                r, _, _ = select.select(rl, [], [], 0.5)
            except Exception:
                continue
            for s in r:
                if s in conns:
                    try:
                        d = s.recv(4096)
                    except Exception:
                        d = b""
                    name = conns[s]
                    if d:
                        self.hits.append((name, d[:200]))
                    else:
                        conns.pop(s); s.close()
                    continue
                typ, name = [(t, n) for x, t, n in self.socks if x is s][0]
                if typ == socket.SOCK_STREAM:
                    c, _ = s.accept()
                    self.hits.append((name, b"<connect>"))
                    conns[c] = name
                else:
                    d, _ = s.recvfrom(4096)
                    self.hits.append((name, d[:200]))


def start_victim(argv0, env_secret):
    env = dict(os.environ, HELDOUT_VICTIM_SECRET=env_secret)
    nobody = pwd.getpwnam("nobody")

    def pre():
        os.setsid()
        os.setgid(nobody.pw_gid); os.setuid(nobody.pw_uid)
    p = subprocess.Popen(["bash", "-c", 'exec -a %s sleep 100000' % argv0], env=env, preexec_fn=pre,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    return p


def victim_state(pid):
    st = {}
    try:
        st["alive"] = os.path.exists("/proc/%d" % pid) and open("/proc/%d/stat" % pid).read().split(")")[1].split()[0] != "Z"
    except Exception:
        st["alive"] = False
    if not st["alive"]:
        return st
    try:
        st["limits"] = open("/proc/%d/limits" % pid).read()
        f = open("/proc/%d/stat" % pid).read().split(")")[1].split()
        st["nice"] = int(f[16]); st["policy"] = int(f[38])
        for l in open("/proc/%d/status" % pid):
            if l.startswith("Cpus_allowed_list"):
                st["cpus"] = l.split()[1]
        st["ioprio"] = subprocess.run(["ionice", "-p", str(pid)], capture_output=True, text=True).stdout.strip()
    except Exception as e:
        st["error"] = repr(e)
    return st


def ipcs_snapshot():
    out = {}
    for kind in ("shm", "msg", "sem"):
        try:
            lines = open("/proc/sysvipc/%s" % kind).read().splitlines()[1:]
        except Exception:
            lines = []
        for l in lines:
            f = l.split()
            out[(kind, f[1])] = (int(f[0]), f)       # (kind, id) -> (key, fields)
    return out


def listdir(d):
    try:
        return set(os.listdir(d))
    except Exception:
        return set()


def proc_table():
    t = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            st = open("/proc/%s/stat" % d).read()
            comm = st[st.index("(") + 1:st.rindex(")")]
            ppid = int(st[st.rindex(")") + 2:].split()[1])
            cmd = open("/proc/%s/cmdline" % d, "rb").read().replace(b"\0", b" ").decode(errors="replace")
            t[int(d)] = (ppid, comm, cmd)
        except Exception:
            pass
    return t


def descendants(root, table):
    out, todo = set(), [root]
    while todo:
        p = todo.pop()
        for pid, (pp, _, _) in table.items():
            if pp == p and pid not in out:
                out.add(pid); todo.append(pid)
    return out


def thread_names(pid):
    names = set()
    for t in glob.glob("/proc/%d/task/*/comm" % pid):
        try:
            names.add(open(t).read().strip())
        except Exception:
            pass
    return names


# ---------------------------------------------------------------- sampler during the batch
class Sampler:
    def __init__(self, root_pid):
        self.root = root_pid
        self.min_avail = None
        self.base_avail = self.meminfo()["MemAvailable"]
        self.base_shmem = self.meminfo()["Shmem"]
        self.max_shmem = self.base_shmem
        self.seen = {}           # pid -> (comm, cmd)
        self.limits_hits = set() # (pid, what)
        self.names = {}          # pid -> thread names with heldout-
        self.unix_names = set()
        self.stop = False

    @staticmethod
    def meminfo():
        d = {}
        for l in open("/proc/meminfo"):
            k, v = l.split(":")
            d[k] = int(v.split()[0]) // 1024
        return d

    def run(self):
        while not self.stop:
            m = self.meminfo()
            a = m["MemAvailable"]
            self.min_avail = a if self.min_avail is None else min(self.min_avail, a)
            self.max_shmem = max(self.max_shmem, m["Shmem"])
            t = proc_table()
            tree = descendants(self.root, t) | {self.root}
            for pid in tree:
                if pid in t:
                    self.seen.setdefault(pid, (t[pid][1], t[pid][2][:200]))
                    try:
                        lim = open("/proc/%d/limits" % pid).read()
                        if re.search(r"Max cpu time\s+7777", lim):
                            self.limits_hits.add((pid, "cpu7777"))
                        if re.search(r"Max cpu time\s+1\s+1\s", lim):
                            self.limits_hits.add((pid, "cpu1"))
                        if re.search(r"Max open files\s+333\s", lim):
                            self.limits_hits.add((pid, "nofile333"))
                    except Exception:
                        pass
            for pid, (_, comm, cmd) in t.items():
                if "heldout-" in comm or "heldout-orphan" in cmd or "heldout-linger" in comm:
                    self.names.setdefault(pid, (comm, cmd[:120]))
            for pid in tree:
                for n in thread_names(pid):
                    if n.startswith("heldout-"):
                        self.names.setdefault(pid, (n, ""))
            try:
                for l in open("/proc/net/unix").read().splitlines():
                    if "@heldout-bound" in l or "@heldout-classmate" in l:
                        self.unix_names.add(l.split()[-1])
            except Exception:
                pass
            time.sleep(0.5)


# ---------------------------------------------------------------- output scanning
CTRL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def scan_outputs(out):
    findings = []   # (file, kind, detail)
    texts = {}
    for root, dirs, files in os.walk(out):
        for f in files:
            p = os.path.join(root, f)
            try:
                size = os.path.getsize(p)
                data = open(p, "rb").read(20 << 20)
            except Exception as e:
                findings.append((p, "unreadable", repr(e))); continue
            texts[p] = data
            rel = os.path.relpath(p, out)
            if size > (5 << 20):
                findings.append((rel, "huge-file", "%d bytes" % size))
            if p.endswith((".png", ".jpg", ".zip", ".npz", ".gz")):
                continue
            m = CTRL.search(data)
            if m:
                findings.append((rel, "control-char", repr(data[max(0, m.start() - 30):m.end() + 30])))
            if b"<script" in data.lower() and p.endswith((".html", ".htm", ".md", ".xml", ".svg")):
                i = data.lower().index(b"<script")
                ctx = data[max(0, i - 40):i + 60]
                # the grader's own inline scripts are fine: only flag hostile tokens
                if b"alert(" in data[i:i + 200]:
                    findings.append((rel, "raw-script", repr(ctx)))
            if p.endswith(".csv"):
                try:
                    rows = list(csv.reader(data.decode("utf-8", "replace").splitlines()))
                    for r in rows:
                        for c in r:
                            if c[:1] in ("=", "+", "-", "@", "\t", "\r") and not re.fullmatch(r"-?\d+(\.\d+)?", c):
                                findings.append((rel, "csv-formula", repr(c[:80])))
                except Exception as e:
                    findings.append((rel, "csv-unparsable", repr(e)))
            if p.endswith(".xml"):
                try:
                    ET.fromstring(data)
                except Exception as e:
                    findings.append((rel, "xml-broken", repr(e)[:120]))
            if p.endswith(".json"):
                try:
                    json.loads(data)
                except Exception as e:
                    findings.append((rel, "json-broken", repr(e)[:120]))
    return findings, texts


# ---------------------------------------------------------------- main
def copy_class(src_dir, dst_dir, keep):
    """cp -a each kept entry: symlinks stay links, FIFOs stay FIFOs (a Python copy would block on them)."""
    for n in os.listdir(src_dir):
        if n in keep:
            subprocess.run(["cp", "-a", "--", os.path.join(src_dir, n), os.path.join(dst_dir, n)], check=False)


def read_grades(out):
    grades, flags, refused = {}, {}, {}
    for p in glob.glob(os.path.join(out, "results", "*.json")):
        try:
            d = json.load(open(p, encoding="utf-8"))
            grades[d["student"]] = d.get("total"); flags[d["student"]] = ",".join(d.get("flags", []))
            refused[d["student"]] = {k: v.get("counts") for k, v in (d.get("refused") or {}).items()}
        except Exception:
            pass
    gb = os.path.join(out, "grades.csv")
    if os.path.exists(gb):
        with open(gb, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                grades[row.get("student")] = row.get("total"); flags[row.get("student")] = row.get("flags", "")
    return grades, flags, refused


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kill-grader", action="store_true")
    ap.add_argument("--as-user")
    ap.add_argument("--only", help="comma-separated student folders (honest ones always added)")
    ap.add_argument("--cap", type=int, default=1500, help="wall-clock cap of the batch, seconds")
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--memory", type=int, default=512)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the results folder")
    ap.add_argument("--table-out", help="also write the table to this file")
    ap.add_argument("--grader-src", help="run the grader package found in this folder (PYTHONPATH) instead of the installed one, "
                                         "e.g. a `git archive HEAD` snapshot when the live tree is being edited")
    args = ap.parse_args()

    import make_class
    manifest = json.load(open(os.path.join(HERE, "MANIFEST.json")))

    # canaries
    if os.path.isdir(CANARY):
        shutil.rmtree(CANARY)
    os.makedirs(CANARY + "/evidence")
    os.chmod(CANARY, 0o1777); os.chmod(CANARY + "/evidence", 0o1777)
    with open(CANARY + "/victim-file", "w") as f:
        f.write(VICTIM_CONTENT)
    os.chmod(CANARY + "/victim-file", 0o666)
    with open(CANARY + "/secret.ipynb", "w") as f:
        json.dump({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                              "source": ["raise RuntimeError('%s-IPYNB')\n" % SECRET, "%s_IPYNB = (\n" % SECRET.replace("-", "_")]}],
                   "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, f)
    with open(CANARY + "/secret-utf16.py", "w", encoding="utf-16") as f:
        f.write("raise RuntimeError('%s-UTF16')\n%s_UTF16 = (\n" % (SECRET, SECRET.replace("-", "_")))
    for p in ("secret.ipynb", "secret-utf16.py"):
        os.chmod(CANARY + "/" + p, 0o600)
    make_class.make_special(CANARY)
    shadow_tokens = []
    try:
        for l in open("/etc/shadow"):
            f = l.split(":")
            if len(f) > 2 and len(f[1]) > 3:
                shadow_tokens.append(f[1][:20].encode())
        shadow_tokens.append(b"daemon:*:")  # a line shape that only /etc/shadow has
    except Exception:
        pass

    # class folder (subset?)
    class_dir = CLASS
    if args.only:
        keep = set(args.only.split(",")) | {k for k, m in manifest.items() if m["kind"] == "honest"}
        class_dir = tempfile.mkdtemp(prefix="heldout-subset-")
        copy_class(CLASS, class_dir, keep)
        manifest = {k: v for k, v in manifest.items() if k in keep}

    run_prefix = []
    out = tempfile.mkdtemp(prefix="heldout-out-")
    if args.as_user:
        u = args.as_user
        try:
            pwd.getpwnam(u)
        except KeyError:
            subprocess.run(["useradd", "-m", u], check=True)
        probe = subprocess.run(["runuser", "-u", u, "--", GRADER, "--version"], capture_output=True, text=True)
        if probe.returncode != 0:
            print("AS-USER SKIPPED: %s cannot run %s (rc %d): %s" % (u, GRADER, probe.returncode,
                                                                  (probe.stderr or probe.stdout).strip()[-300:]))
            print("(the grader's Python lives under /root, mode 0700)")
            return 0
        shared = tempfile.mkdtemp(prefix="heldout-asuser-")
        os.chmod(shared, 0o755)
        dst = os.path.join(shared, "class")
        subprocess.run(["cp", "-a", class_dir, dst], check=True)
        subprocess.run(["chown", "-R", "-h", u, shared], check=True)
        shutil.rmtree(out); out = os.path.join(shared, "out")
        class_dir = dst
        run_prefix = ["runuser", "-u", u, "--"]

    victim = start_victim("heldout-victim", VICTIM_SECRET)
    victim_kill = start_victim("heldout-victim-kill", VICTIM_SECRET)
    with open(CANARY + "/victim.pid", "w") as f:
        f.write(str(victim.pid))
    with open(CANARY + "/victim-kill.pid", "w") as f:
        f.write(str(victim_kill.pid))
    for p in ("victim.pid", "victim-kill.pid"):
        os.chmod(CANARY + "/" + p, 0o644)
    v_before = victim_state(victim.pid)

    lis = Listeners(); lis.start()
    ipc_before = ipcs_snapshot()
    dirs = ("/dev/shm", "/tmp", "/var/tmp", "/run")
    dirs_before = {d: listdir(d) for d in dirs}
    procs_before = set(proc_table())
    mounts_before = open("/proc/mounts").read()
    keys_before = open("/proc/keys").read() if os.path.exists("/proc/keys") else ""

    grader_cmd = [GRADER]
    if args.grader_src:
        os.environ["PYTHONPATH"] = os.path.abspath(args.grader_src)
        grader_cmd = [sys.executable, "-c", "import sys; sys.argv[0] = 'grader'; from grader.cli import main; sys.exit(main())"]
        if run_prefix:
            run_prefix = run_prefix + ["env", "PYTHONPATH=" + os.path.abspath(args.grader_src)]
    grader_tmp = tempfile.mkdtemp(prefix="heldout-gtmp-")     # the batch's own TMPDIR: its leftovers are its own
    os.chmod(grader_tmp, 0o1777)
    passes = []
    excluded = []
    sampler = None
    t_all = time.time()
    capped = False
    cur_class = class_dir
    for npass in range(1, 5):
        cmd = run_prefix + grader_cmd + ["batch", cur_class, "--out", out, "-e", "8-2", "--jobs", str(args.jobs),
                            "--timeout", str(args.timeout), "--memory", str(args.memory), "--seed", "7"]
        print("pass %d running:" % npass, " ".join(repr(c) if " " in c else c for c in cmd), flush=True)
        t0 = time.time()
        so_path = os.path.join(tempfile.gettempdir(), "heldout-batch.stdout.%d" % npass)
        se_path = os.path.join(tempfile.gettempdir(), "heldout-batch.stderr.%d" % npass)
        log_out = open(so_path, "wb"); log_err = open(se_path, "wb")
        proc = subprocess.Popen(cmd, stdout=log_out, stderr=log_err, start_new_session=True, cwd="/tmp",
                                env=dict(os.environ, TMPDIR=grader_tmp))
        if sampler is None:
            sampler = Sampler(proc.pid)
            threading.Thread(target=sampler.run, daemon=True).start()
        else:
            sampler.root = proc.pid
        killed = False
        while proc.poll() is None:
            el = time.time() - t0
            if args.kill_grader and el > 15 and not killed:
                os.kill(proc.pid, signal.SIGKILL); killed = True
                print("SIGKILLed the grader (pid %d) at %.1f s; %d processes seen in its tree" % (proc.pid, el, len(sampler.seen)), flush=True)
            if time.time() - t_all > args.cap:
                capped = True
                print("CAP HIT after %d s: killing the batch's process group" % args.cap, flush=True)
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except Exception:
                    pass
                break
            time.sleep(0.5)
        rc = proc.wait()
        log_out.close(); log_err.close()
        wall = time.time() - t0
        err = open(se_path, "rb").read()
        crashed = (b"Traceback (most recent call last)" in err) or rc not in (0, 1)
        culprits = []
        if crashed and not killed:
            lines_ = err.strip().splitlines()
            tail = lines_[-1] if lines_ else b""      # the exception's own message names the culprit
            for n in manifest:
                if n in excluded:
                    continue
                if n.encode() in tail or (n.endswith(".zip") and n[:-4].encode() in tail):
                    culprits.append(n)
        last = err.strip().splitlines()[-1].decode(errors="replace")[:160] if err.strip() else ""
        passes.append({"pass": npass, "rc": rc, "wall": round(wall), "crashed": crashed, "culprits": culprits,
                       "last_line": last, "stdout": so_path, "stderr": se_path})
        print("pass %d: rc=%s wall=%.0fs crashed=%s culprits=%s %s" % (npass, rc, wall, crashed, culprits, last), flush=True)
        if not crashed or not culprits or capped or args.kill_grader:
            break
        excluded += culprits
        nxt = tempfile.mkdtemp(prefix="heldout-subset-")
        os.chmod(nxt, 0o755)
        copy_class(class_dir, nxt, set(os.listdir(class_dir)) - set(excluded))
        if run_prefix:
            subprocess.run(["chown", "-R", "-h", args.as_user, nxt])
        cur_class = nxt
    wall = time.time() - t_all
    time.sleep(3)
    if args.kill_grader:
        print("waiting 30 s for the batch's processes to go away...", flush=True)
        time.sleep(30)
    sampler.stop = True
    time.sleep(1)

    # ---------------- after
    table_now = proc_table()
    left = {}
    for pid in set(sampler.seen) | set(sampler.names):
        if pid in table_now and pid not in (victim.pid, victim_kill.pid):
            left[pid] = table_now[pid]
    for pid, (pp, comm, cmdl) in table_now.items():
        if pid not in procs_before and ("heldout-" in comm or "heldout-orphan" in cmdl or "heldout-hang" in comm):
            left[pid] = (pp, comm, cmdl)
        if pid in table_now and any(n.startswith("heldout-") for n in thread_names(pid)) and pid not in procs_before:
            left[pid] = table_now[pid]
    left.pop(os.getpid(), None)

    v_after = victim_state(victim.pid)
    vk_after = victim_state(victim_kill.pid)
    ipc_after = ipcs_snapshot()
    new_ipc = {k: v for k, v in ipc_after.items() if k not in ipc_before}
    dirs_new = {d: sorted(listdir(d) - dirs_before[d]) for d in dirs}
    dirs_new["/tmp"] = [n for n in dirs_new["/tmp"] if not n.startswith(("heldout-out-", "heldout-subset-", "heldout-asuser-", "heldout-batch", "heldout-gtmp-", "tmp"))] + \
                       [n for n in dirs_new["/tmp"] if n.startswith("tmp")]
    mounts_new = [l for l in open("/proc/mounts").read().splitlines() if l not in mounts_before.splitlines()]
    keys_after = open("/proc/keys").read() if os.path.exists("/proc/keys") else ""
    evidence = sorted(os.listdir(CANARY + "/evidence"))
    gtmp_left = []
    for root, ds, fs in os.walk(grader_tmp):
        for f in fs:
            p = os.path.join(root, f)
            try:
                mode = os.stat(p).st_mode & 0o777
            except OSError:
                continue
            gtmp_left.append((os.path.relpath(p, grader_tmp), oct(mode)))
    victim_file_now = open(CANARY + "/victim-file").read()
    zipslip = [p for p in ("zipslip-rel.txt", "zipslip-abs.txt") if os.path.exists(CANARY + "/" + p)]
    findings, texts = scan_outputs(out)
    batch_stdout = b"\n".join(open(p["stdout"], "rb").read() for p in passes)
    batch_stderr = b"\n".join(open(p["stderr"], "rb").read() for p in passes)
    alltext = b"\n".join(list(texts.values()) + [batch_stdout, batch_stderr])
    markers = set(m.decode(errors="replace") for m in re.findall(rb"HELDOUT-SUCCESS:([A-Za-z0-9_]+:[A-Za-z0-9_.:\-]+)", alltext))
    for ch, d in lis.hits:
        for m in re.findall(rb"HELDOUT-SUCCESS:([A-Za-z0-9_]+:[A-Za-z0-9_.:\-]+)", d):
            markers.add(m.decode())
    for e in evidence:
        if "." in e:
            sid, what = e.split(".", 1)
            markers.add(sid + ":" + what)

    # grades
    gradebook = os.path.join(out, "grades.csv")
    grades, flags, refused = read_grades(out)
    sim = open(os.path.join(out, "similarity.csv"), encoding="utf-8", errors="replace").read() if os.path.exists(os.path.join(out, "similarity.csv")) else ""

    def score(name):
        g = grades.get(name)
        if g is None and name.endswith(".zip"):
            g = grades.get(name[:-4])
        try:
            return float(g) if g not in (None, "") else None
        except ValueError:
            return None

    # ---------------- judge
    rows = []
    leak_tokens = {"victim-env": VICTIM_SECRET.encode(), "victim-file": VICTIM_CONTENT.strip().split(" ")[0].encode(),
                   "secret": SECRET.encode(), "secret_": SECRET.replace("-", "_").encode()}
    leaks = {k for k, t in leak_tokens.items() if t in alltext}
    shadow_leak = any(t in alltext for t in shadow_tokens)
    hits_by = {}
    for ch, d in lis.hits:
        hits_by.setdefault(ch, []).append(d)

    def file_findings(tokens):
        out_ = []
        for rel, kind, det in findings:
            if any(t in det for t in tokens) or any(t in rel for t in tokens):
                out_.append("%s %s" % (kind, rel))
        return out_

    for name, m in sorted(manifest.items()):
        alias = m["alias"]
        mk = sorted(x.split(":", 1)[1] for x in markers if x.split(":", 1)[0] == alias)
        major = [x for x in mk if not x.endswith("-minor") and x != "fsprobe"]
        minor = [x for x in mk if x.endswith("-minor")]
        sc = score(name)
        why = []
        notes = []
        verdict = None
        if m["kind"] == "honest":
            verdict = "OK" if sc == 10 else "HARMED"
            why.append("score %s" % sc)
            if sc != 10:
                try:
                    rp = [p for p in glob.glob(os.path.join(out, "results", "*.json")) if json.load(open(p)).get("student") == name]
                    msgs = re.findall(r'"message": "([^"]+)"', open(rp[0]).read()) if rp else []
                    why.append("first message: " + (msgs[0][:100] if msgs else "?"))
                except Exception:
                    pass
            rows.append((name, m["class"], verdict, "; ".join(why))); continue
        if major:
            why.append("markers: " + ",".join(major))
        c = m["class"]
        if alias == "a1_unix_path" and "unix-path" in hits_by: why.append("ui.sock hit")
        if alias == "a2_abstract" and ("abstract" in hits_by or "abstract-dgram" in hits_by): why.append("abstract listener hit")
        if alias == "a2_abstract" and any("bound-a2" in n for n in sampler.unix_names): why.append("bound @heldout-bound-a2")
        if alias == "a3_tcp_udp" and any(k in hits_by for k in ("tcp4", "tcp6", "udp4")): why.append("tcp/udp listener hit")
        if alias == "a6_compat_syscalls" and any(b"a6_" in d for ds in hits_by.values() for d in ds): why.append("listener hit")
        if alias == "b1_prlimit_victim" and v_after.get("limits") and v_after["limits"] != v_before.get("limits"): why.append("victim limits changed")
        if alias == "b2_prlimit_parent" and any(w in ("cpu7777", "nofile333") for _, w in sampler.limits_hits): why.append("grader-tree limits changed %s" % sorted(sampler.limits_hits))
        if alias == "b3_setpriority" and v_after.get("nice", 0) != v_before.get("nice", 0): why.append("victim nice %s" % v_after.get("nice"))
        if alias == "b4_sched":
            for k in ("cpus", "policy", "ioprio"):
                if v_after.get(k) != v_before.get(k): why.append("victim %s %s->%s" % (k, v_before.get(k), v_after.get(k)))
        if alias == "b5_kill" and not vk_after.get("alive"): why.append("victim-kill is dead")
        if alias == "b6_ptrace_mem" and "victim-env" in leaks: why.append("victim's secret env in outputs")
        if alias == "c1_writer":
            lk = [k for k in new_ipc if new_ipc[k][0] in (0x4E1D0C01, 0x4E1D0C02, 0x4E1D0C03)]
            if lk: why.append("SysV leftovers %s" % lk)
            fl = [d + "/" + n for d, ns in dirs_new.items() for n in ns if "heldout-c" in n]
            if fl: why.append("files left %s" % fl)
        if alias == "c2_reader" and sc: why.append("reader scored %s" % sc)
        if alias == "d2_sysv_shm":
            lk = [k for k in new_ipc if 0x4E1D0D01 <= new_ipc[k][0] <= 0x4E1D0D04]
            if lk: why.append("SysV shm leftovers %d" % len(lk))
        if alias == "e4_ns_mount" and any("heldout" in l for l in mounts_new): why.append("mount left")
        if alias == "e5_kernel" and "heldout-key" in keys_after and "heldout-key" not in keys_before: why.append("heldout-key in /proc/keys")
        if alias == "f3_linger" and any("linger" in v[1] for v in left.values()): why.append("heldout-linger alive after batch")
        if alias == "f3_linger" and any(e.startswith("f3_linger.linger-alive") for e in evidence): why.append("linger evidence")
        if alias == "f4_fork_escape":
            seen = [v for v in sampler.names.values() if "orphan" in v[0] or "orphan" in v[1]]
            if seen: why.append("orphans seen %d" % len(seen))
            if any("orphan" in v[1] or "orphan" in v[2] for v in left.values()): why.append("orphan alive after batch")
        if alias == "f5_ignore_signals" and any("heldout-hang" in v[1] for v in left.values()): why.append("hang process alive after batch")
        if alias in ("f1_hang_import", "f2_busy_threads", "f5_ignore_signals", "y_f6_cpu_parent", "i5_fifo"):
            if capped: why.append("batch hit the cap")
        if alias == "y_f6_cpu_parent" and any(w == "cpu1" for _, w in sampler.limits_hits): why.append("grader got RLIMIT_CPU 1")
        if alias == "h1_exc_payload":
            ff = file_findings(["HELDOUT-H1", "pwned", "heldout-h1", "alert(", "HYPERLINK", "calc"])
            if ff: why.append("payload raw in outputs: " + "; ".join(sorted(set(ff))[:6]))
        if alias == "h2_huge_exc":
            ff = [f"{r} {d}" for r, k, d in findings if k == "huge-file"]
            if ff: why.append("huge output files: " + "; ".join(ff[:4]))
        if alias == "h7_result_tamper":
            if victim_file_now != VICTIM_CONTENT: why.append("victim-file overwritten")
            if "victim-file" in leaks: why.append("victim-file content in outputs")
            if shadow_leak: why.append("shadow content in outputs")
        if c == "g":
            raw = name.encode()
            bad = []
            for p, data in texts.items():
                if p.endswith(".csv") and raw[:1] in b"=+-@":
                    try:
                        cells = [c for r in csv.reader(data.decode("utf-8", "replace").splitlines()) for c in r]
                    except Exception:
                        cells = []
                    if name in cells:
                        bad.append("csv:" + os.path.basename(p)[:40])
                    continue
                if raw in data and (CTRL.search(raw) or b"<script" in raw):
                    if CTRL.search(raw):
                        bad.append("ctrl:" + os.path.basename(p)[:40])
                    elif b"<script" in raw and p.endswith((".html", ".md", ".xml")):
                        bad.append("html:" + os.path.basename(p)[:40])
            if bad: why.append("raw name in outputs: " + ",".join(sorted(set(bad))[:5]))
            if sc != 10: why.append("not graded 10/10 (score %s)" % sc)
        if c == "i":
            if name == "i1_symlink_shadow" and shadow_leak: why.append("shadow content in outputs")
            if name in ("i2_symlink_solution", "i3_symlink_classmate", "i10_dirlink_solutions") and sc: why.append("scored %s via a link" % sc)
            if name == "i4_hardlink_classmate" and sc == 10 and "i4_hardlink_classmate" not in sim: why.append("10/10 and not in similarity.csv")
            if name == "i4_hardlink_classmate" and score("honest1") != 10:
                why.append("classmate honest1 lost its marks (score %s: its file now has 2 links)" % score("honest1"))
            if name == "i10_dirlink_solutions" and sc is None and grades:
                notes.append("silently absent from the gradebook and the output")
            if name == "i7_nearname_symlink":
                if victim_file_now != VICTIM_CONTENT: why.append("victim-file overwritten")
                if "victim-file" in leaks: why.append("victim-file content in outputs")
            if name == "i8_ipynb_symlink" and (b"IPYNB" in alltext and ("secret" in leaks or "secret_" in leaks)): why.append("secret notebook content in outputs")
            if name == "i9_utf16_symlink" and (b"UTF16" in alltext and ("secret" in leaks or "secret_" in leaks)): why.append("secret utf16 content in outputs")
            if name == "i11_zipslip.zip":
                if zipslip: why.append("zip slip wrote %s" % zipslip)
                if shadow_leak: why.append("shadow content in outputs")
        mh = m.get("max_honest_score")
        if mh == 0 and sc and c in ("h",) and "scored" not in " ".join(why):
            why.append("scored %s without doing the work" % sc)
        CAPABILITY = ("rewrote-code-", "sees-grader-module-", "gc-expected-dicts", "np.savez-intercepted", "see-abstract-names",
                      "has-capabilities", "read-case-file", "read-json", "list-")
        capability = [x for x in major if x.startswith(CAPABILITY)]
        if capability and len(capability) == len(major) and why and why[0].startswith("markers:") and len(why) == 1:
            why = ["capability only, no gain: " + ",".join(capability)]
            partial = True
        else:
            partial = False
        crashers = [p for p in passes if name in p["culprits"]]
        if crashers:
            why.append("crashed the batch (pass %d: %s)" % (crashers[0]["pass"], crashers[0]["last_line"][:90]))
        if partial and not crashers:
            verdict = "PARTIAL"
        elif why:
            verdict = "SUCCEEDED"
        elif sc is None:
            verdict = "UNCLEAR"; why.append("no result for this student" + (" (batch capped)" if capped else ""))
        else:
            verdict = "BLOCKED"; why.append("no evidence; score %s" % sc)
        if refused.get(name):
            why.append("grader saw: %s" % ",".join("%s=%s" % kv for r in refused[name].values() for kv in (r or {}).items()))
        if minor:
            why.append("minor: " + ",".join(minor))
        why += notes
        rows.append((name, c, verdict, "; ".join(why)))

    # ---------------- report
    lines = []
    P = lines.append
    P("batch: %d pass(es), total wall=%.0fs capped=%s kill-grader=%s gradebook=%s (%d students with results) out=%s" % (
        len(passes), wall, capped, args.kill_grader, os.path.exists(gradebook), len(grades), out))
    for p in passes:
        P("   pass %d: rc=%s wall=%ss crashed=%s culprits=%s %s" % (p["pass"], p["rc"], p["wall"], p["crashed"],
          [c.encode("unicode_escape").decode()[:40] for c in p["culprits"]], p["last_line"][:120]))
    P("memory: MemAvailable before %d MB, min during %s MB (peak use ~%s MB); Shmem %d -> max %d MB" % (
        sampler.base_avail, sampler.min_avail, (sampler.base_avail - (sampler.min_avail or sampler.base_avail)),
        sampler.base_shmem, sampler.max_shmem))
    P("listener hits: %s" % ({k: len(v) for k, v in hits_by.items()} or "none"))
    P("victim before %s" % {k: v for k, v in v_before.items() if k != "limits"})
    P("victim after  %s ; victim-kill alive=%s" % ({k: v for k, v in v_after.items() if k != "limits"}, vk_after.get("alive")))
    P("new SysV objects: %s" % ([(k, hex(v[0])) for k, v in new_ipc.items()] or "none"))
    P("new files: %s" % {d: n[:12] for d, n in dirs_new.items() if n})
    P("new mounts: %s ; evidence files: %s" % (mounts_new or "none", evidence or "none"))
    readable = [p for p, m in gtmp_left if int(m, 8) & 0o004]
    P("grader TMPDIR leftovers: %d files, %d world-readable %s" % (len(gtmp_left), len(readable), readable[:6]))
    P("processes of the batch left after it ended: %s" % ({p: (v[1], v[2][:60]) for p, v in left.items()} or "none"))
    P("grader-tree limit changes seen: %s" % (sorted(sampler.limits_hits) or "none"))
    P("leaks in outputs: %s shadow=%s ; victim-file intact=%s ; zipslip=%s" % (sorted(leaks) or "none", shadow_leak,
                                                                               victim_file_now == VICTIM_CONTENT, zipslip or "none"))
    P("output findings (%d):" % len(findings))
    for rel, kind, det in findings[:40]:
        P("   %-14s %s  %s" % (kind, rel[:70].encode("unicode_escape").decode(), det[:110]))
    P("")
    if args.kill_grader:
        P("kill-grader mode: per-student verdicts skipped (the batch was cut short on purpose).")
        P("leftover processes 30 s after SIGKILL: %d ; grader TMPDIR leftovers: %d files (%d world-readable)" % (
            len(left), len(gtmp_left), len(readable)))
        rows = []
    P("%-34s %-6s %-9s %s" % ("student", "class", "verdict", "why"))
    tot = {}
    for name, c, v, why in rows:
        tot[v] = tot.get(v, 0) + 1
        shown = name.encode("unicode_escape").decode()
        if len(shown) > 34:
            shown = shown[:31] + "..."
        P("%-34s %-6s %-9s %s" % (shown, c, v, why[:300]))
    P("")
    P("totals: " + ", ".join("%s %d" % kv for kv in sorted(tot.items())))
    text = "\n".join(lines)
    print(text)
    if args.table_out:
        open(args.table_out, "w").write(text + "\n")

    # ---------------- cleanup (only what this run and its attacks made)
    lis.stop = True
    for p in (victim, victim_kill):
        try:
            p.kill()
        except Exception:
            pass
    for pid, (pp, comm, cmdl) in left.items():
        if "heldout" in comm or "heldout" in cmdl or pid in sampler.seen:
            try:
                os.kill(pid, signal.SIGKILL)
            except Exception:
                pass
    for (kind, ident), (key, f) in new_ipc.items():
        flag = {"shm": "-m", "msg": "-q", "sem": "-s"}[kind]
        subprocess.run(["ipcrm", flag, ident], capture_output=True)
    for d, ns in dirs_new.items():
        for n in ns:
            if n.startswith("heldout"):
                p = os.path.join(d, n)
                try:
                    shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
                except Exception:
                    pass
    for l in mounts_new:
        if "heldout" in l:
            subprocess.run(["umount", "-l", l.split()[1]], capture_output=True)
    if "heldout-key" in keys_after and "heldout-key" not in keys_before:
        subprocess.run(["keyctl", "purge", "user", "heldout-key"], capture_output=True)
    if not args.keep:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(grader_tmp, ignore_errors=True)
    for d in {class_dir, cur_class}:
        if os.path.basename(d).startswith("heldout-subset-"):
            shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    try:
        main()
    except Exception:
        import traceback
        traceback.print_exc()
    sys.exit(0)
