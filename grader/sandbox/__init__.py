"""The one sandbox every child that runs submitted code enters (`grader batch`, `grader check`
and the Gradescope autograder): what such a child may do, said in one place.

A child may
- read what importing and running Python, NumPy, Keras and TensorFlow needs (the interpreter's
  installation and `sys.path`, the system's libraries, a few files of `/etc`, its own
  `/proc/<pid>`, the CPU description in `/proc` and `/sys`), minus the kit's own packages
  (`grader`, `solutions`, `attnkit`, `exercises`, or the whole checkout) and the folders the
  caller protects (the class's submissions, the results, the scratch tree); the installation
  (its prefixes and site-packages) is read even inside such a folder (Gradescope's venv in
  /autograder, a `.venv` in the checkout), less the kit's packages and protected folders in it;
- read its own inputs (the case files of its parts; they are never written by a child) and
  the folder of the submission it grades;
- read and write its own scratch folder, and nothing else (`/dev/null` aside);
- make the system calls on an allowlist (grader.sandbox.seccomp), and no other: threads but no
  process, signals, limits, priority and affinity of itself only, no socket of any family, no
  SysV IPC or memfd, no namespace, mount, clock, key, BPF, perf or io_uring;
- live in IPC and network namespaces of its own, as a user of its own with no capability where
  the grader is root, and die with whoever started it (grader.sandbox.world).
The environment it sees is an allowlist too (`ENVIRONMENT`), with HOME and TMPDIR in its folder.
Resource limits (grader.sandbox.limits) cap its memory, output, processes and CPU time.

What we do as bubblewrap and nsjail do, and where we differ:
- As both: no_new_privs, a session of its own, die-with-parent, new IPC and network
  namespaces (a user namespace first where unprivileged), rlimits on address space, CPU time,
  file size, processes and core dumps.
- Files: Landlock (grader.sandbox.landlock), not a mount namespace built from bind mounts as
  bubblewrap and nsjail build one. Landlock is in the kernel (5.13+), needs no privilege and no
  helper, and a process can enter it after a fork: children are forked from a helper that
  imported TensorFlow once (grader.sandbox.processes), where a new program under bubblewrap
  would pay the 4-second import every time. It holds for root as for an ordinary user, and
  where user namespaces are disabled. A mount namespace is used only under root, and only to
  let a child's own user enter the folders on the way to the installation (world.py).
- System calls: an allowlist with argument checks, found by tracing real grading runs.
  Neither tool ships a policy of its own: bubblewrap loads whatever BPF program it is handed
  (Flatpak hands it a denylist), nsjail compiles a Kafel policy its user writes. A denylist
  is what let earlier attacks through here, so nothing not on the list runs.
- No PID namespace (both tools offer one): the child would have to fork again to be inside
  it; what it gives is had from the filter (nothing aimed at another pid) and Landlock (only
  its own /proc/<pid>). No UTS or cgroup namespace: nothing a child could change there.
- No cgroup: an ordinary user can rarely write one. Memory is capped as address space, and
  the forms that escape that count (memfd, SysV and POSIX shared memory) are refused instead.
- Refused calls are reported by name to the instructor (a user-notification listener the
  child hands to its supervisor), where both tools only make them fail.
The grader and its helper also make themselves non-dumpable, so that `/proc/<pid>/mem` of
either is closed to any process of the same user that is not root, sandboxed or not.

The package: `processes` is the grader's side (jobs, their outcomes) and talks to `zygote`, the
helper that imports TensorFlow once and forks the children; `scheduler` starts, times and kills
them; `child` is what runs in a child (read the cases, enter the sandbox, import the
submission, run each part, write plain arrays); `limits` sets its resource limits (and tells a
failure that ran into one); `world` its namespaces, user and death with its parent; `landlock`
and `seccomp` are the two kernel mechanisms (`syscall_numbers` their data); `supervisor` is the
helper's side of each child's channel.

What the grader can see is flagged: every call the seccomp filter refuses (through its
user-notification listener, so a submission cannot hide it), and, through a Python audit hook
in the child, every open, listing or removal outside the allowlist and every import of a blocked
package. The audit hook lives in the submission's own process, so a determined submission can
silence it; the kernel refuses those accesses all the same.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import tempfile

from grader.i18n import _
from grader.kit import KIT
from grader.sandbox import landlock, seccomp, supervisor, world

# Kept from the grader's environment; anything else (tokens, paths of the instructor's) is not.
ENVIRONMENT = (
    *("PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "VIRTUAL_ENV", "LD_LIBRARY_PATH"),
    # A maintainer's trace of the calls a child makes (grader.sandbox.seccomp).
    "GRADER_SYSCALL_LOG",
)
# What Python itself needs on Windows (without SYSTEMROOT it cannot even seed its hashes), and
# TensorFlow's and Keras's folders there; children on Windows are never sandboxed.
WINDOWS_ENVIRONMENT = (
    "SYSTEMROOT",
    "WINDIR",
    "PATHEXT",
    "COMSPEC",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "LOCALAPPDATA",
    "APPDATA",
)
ENVIRONMENT_PREFIXES = ("LC_", "KERAS_", "TF_", "XLA_", "CUDA_", "JAX_", "OMP_", "MKL_")
SYSTEM_FOLDERS = ("/usr", "/lib", "/lib32", "/lib64", "/opt/conda")
SYSTEM_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/os-release",
    "/etc/mime.types",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/sys/devices/system/cpu",
    "/sys/devices/system/node",
    "/sys/fs/cgroup",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
)
KIT_PACKAGES = ("grader", "solutions", "attnkit", "exercises")
PR_SET_DUMPABLE = 4


def status() -> dict:
    """Which protections this machine gives a child, for batch.json, the report and the CLI."""
    abi = landlock.abi()
    return {
        "landlock_abi": abi,
        "files": abi >= 1,
        "signals": abi >= 6 or seccomp.supported(),
        "processes": seccomp.supported(),
        "network": seccomp.supported() or abi >= 4,
        # A world of its own (grader.sandbox.world): IPC and network namespaces, and as root a
        # user of its own for each child, without which a root grader runs nothing.
        "namespaces": world.available() is None,
        "own_user": world.own_user_problem() is None,
        # The seccomp listener reaches the supervisor only through the child's channel.
        "complete": abi >= 1
        and seccomp.supported()
        and supervisor.can_pass_channel()
        and world.own_user_problem() is None,
    }


def describe(state: dict | None = None) -> str:
    """The protections of `state` in words (the student's language: `grader check` says them)."""
    state = state or status()
    if not state["complete"]:
        missing = [] if state["files"] else [_("Landlock (Linux 5.13 or newer, enabled)")]
        if not state["processes"]:
            missing.append(_("seccomp (Linux on x86-64 or arm64)"))
        elif not supervisor.can_pass_channel():
            missing.append(_("Unix sockets that pass descriptors"))
        if not state.get("own_user", True):
            missing.append(
                _(
                    "a user of their own for its children: {why}",
                    why=world.own_user_problem(),
                )
            )
        return _(
            "NOT sandboxed: this machine ({system}) lacks {missing}; submitted code could read "
            "and write whatever the grader's user can",
            system=f"{platform.system()} {platform.release()}",
            missing=_(" and ").join(missing),
        )
    words = [
        _(
            "sandboxed (Landlock ABI {abi} and an allowlist of system calls): files allowlisted",
            abi=state["landlock_abi"],
        ),
        _("no new processes"),
        _("no socket"),
        _("signals, limits and priority of itself only"),
        _("no ptrace"),
    ]
    if state.get("namespaces"):
        words.append(_("IPC and network namespaces of its own"))
    else:
        words.append(_("no namespaces ({why})", why=world.available()))
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        words.append(_("each child as a user of its own, without capabilities"))
    return ", ".join(words)


def protect_this_process(protect: bool = True) -> None:
    """Close this process's memory to same-user processes (PR_SET_DUMPABLE 0), on Linux.

    A forked child inherits the setting; it calls this with `protect=False`, so that its own
    `/proc/<pid>` stays its own (a non-dumpable process's belongs to root). Other children
    cannot reach it all the same: Landlock refuses ptrace across sandboxes.
    """
    if platform.system() != "Linux":
        return
    try:
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0 if protect else 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def protected_paths(extra=()) -> list[str]:
    kit = KIT
    if (kit / "pyproject.toml").is_file():
        own = [kit]
    else:  # installed into site-packages: only the kit's own packages
        own = [kit / name for name in KIT_PACKAGES]
    return [os.path.realpath(p) for p in [*own, *extra]]


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _beneath(root: str, protected: list[str]) -> list[str]:
    """`root`, or as much of it as holds no protected path."""
    root = os.path.realpath(root)
    if not os.path.exists(root) or any(_within(root, p) for p in protected):
        return []
    inside = [p for p in protected if _within(p, root)]
    if not inside:
        return [root]
    if not os.path.isdir(root):
        return []
    try:
        names = os.listdir(root)
    except OSError:
        return []
    granted = []
    for name in names:
        granted.extend(_beneath(os.path.join(root, name), protected))
    return granted


def installation_roots() -> list[str]:
    """The folders of the Python installation itself: its prefixes (a venv's and the base
    interpreter's) and its site-packages folders, as real paths."""
    import site

    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    try:
        roots.update(site.getsitepackages())
    except AttributeError:  # an old virtualenv's site module
        pass
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        roots.add(site.getusersitepackages())
    return sorted({os.path.realpath(root) for root in roots if root})


def grants(policy: dict, pid: int) -> list[tuple[str, int]]:
    """The allowlist: (real path, Landlock rights) pairs.

    The installation (`installation_roots`) is read wherever it lies, even inside a protected
    folder: Gradescope's setup.sh makes its venv in /autograder, which the autograder protects,
    and an instructor's `.venv` often lies in the checkout, which is the kit. Without it a child
    could import only what the helper had loaded before the fork (`import numpy.testing`
    failed with "Permission denied"). What the installation holds of the protected (the kit's
    own packages when they are installed into it, a protected folder inside it) stays refused.
    """
    protected = protected_paths(policy.get("protected", ()))
    installed = installation_roots()
    roots = {*SYSTEM_FOLDERS}
    roots.update(p for p in sys.path if p and os.path.isabs(p))
    read = set()
    for root in roots:
        read.update(_beneath(root, protected))
    own = [os.path.realpath(KIT / name) for name in KIT_PACKAGES]
    for root in installed:
        # Refused within it: each protected path but those that hold it (a venv in /autograder
        # or in the checkout), and the kit's packages wherever the kit lies; a root that is
        # itself protected (a venv made in the checkout's own folder) stays refused whole.
        hidden = [p for p in protected if p == root or not _within(root, p)]
        read.update(_beneath(root, [*hidden, *own]))
    read.update(os.path.realpath(p) for p in SYSTEM_FILES if os.path.exists(p))
    read.add(f"/proc/{pid}")
    read.update(os.path.realpath(p) for p in policy.get("read", ()))
    pairs = [(path, landlock.READ) for path in sorted(read)]
    pairs.append(("/dev/null", landlock.READ_FILE | landlock.WRITE_FILE))
    pairs.append((os.path.realpath(policy["workdir"]), landlock.WRITE))
    return pairs


def clean_environment(keep: dict | None = None) -> dict:
    """The grader's environment, cut down to the allowlist."""
    kept = ENVIRONMENT + (WINDOWS_ENVIRONMENT if os.name == "nt" else ())
    return {
        name: value
        for name, value in (keep if keep is not None else os.environ).items()
        if name in kept or name.startswith(ENVIRONMENT_PREFIXES)
    }


def enter(policy: dict, end) -> None:
    """In a freshly forked child, before any submitted code: enter the sandbox for good, then
    tell the supervisor (through `end`) that submitted code may run now."""
    workdir = os.path.realpath(policy["workdir"])
    for name in [n for n in os.environ if n not in clean_environment()]:
        del os.environ[name]
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir
    tempfile.tempdir = workdir
    sys.dont_write_bytecode = True  # no .pyc next to the libraries: that write would be refused
    pid = os.getpid()
    allowed = grants(policy, pid)
    landlock.restrict(allowed, landlock.abi())
    _unreadable_off_the_path([path for path, _ in allowed])
    listener = seccomp.confine(pid)
    supervisor.tell_started(end, listener)
    own = [workdir, *(os.path.realpath(p) for p in policy.get("read", ()))]
    library = [root for root in (*installation_roots(), *SYSTEM_FOLDERS) if root not in own]
    sys.addaudithook(_audit_hook(allowed, end, library, own))


def _unreadable_off_the_path(readable: list[str]) -> None:
    """Take off sys.path every folder the child may not read (the kit's checkout, where the
    grader ran as `python -m grader` from it: Gradescope's run_autograder, an Actions step):
    Python's import system would list it for every module not yet imported, an honest
    `import numpy.testing` included, and each listing would be refused and flagged. Nothing
    the child may import lies there: it could not be read."""
    kept = []
    for entry in sys.path:
        folder = os.path.realpath(entry) if entry else ""
        if not entry or any(_within(folder, root) for root in readable):
            kept.append(entry)
        else:
            sys.path_importer_cache.pop(entry, None)
    sys.path[:] = kept


WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
WATCHED = {
    "open": "open",
    "os.listdir": "open",
    "os.scandir": "open",
    "os.remove": "open",
    "os.rmdir": "open",
    "os.mkdir": "open",
    "os.rename": "open",
    "os.link": "open",
    "os.symlink": "open",
}


# What starts a process or opens a socket, which the seccomp filter refuses and reports. An
# installed library may try one while it is imported (matplotlib runs `fc-list` to list the
# fonts, `ctypes.util.find_library` runs `ldconfig`): then it is refused here, before the call,
# as the kernel would refuse it, so that an honest import is not reported (see _audit_hook).
STARTS = frozenset(
    {
        "subprocess.Popen",
        "os.posix_spawn",
        "os.fork",
        "os.forkpty",
        "os.system",
        "os.exec",
        "os.spawn",
        "socket.__new__",
    }
)
IMPORT_MACHINERY = "<frozen importlib."


def _audit_hook(allowed: list[tuple[str, int]], end, library=(), own=()):
    """The child's witness of what the kernel refuses it quietly (an open, a listing, a
    removal outside the allowlist) and of its attempts to start a process or open a socket.

    What an installed library does while it is imported is never reported, and its attempts
    to start a process or open a socket fail here (PermissionError, as the kernel would say)
    before they reach the kernel, which would report them: an honest `import matplotlib`,
    `import scipy` or `import numpy.testing` is flagged on no path. "While it is imported": from
    the call out to the import machinery, every frame runs code of the installation
    (`library`, less the child's `own` folders: its submission's, its inputs, its scratch);
    code of the submission on the way (a finder it added, a module it wrote) is reported as
    before, and so is a listing the import machinery makes for an import the submission wrote
    itself (a folder it put on sys.path)."""
    readable = tuple(path for path, _ in allowed)
    writable = tuple(path for path, rights in allowed if rights & landlock.WRITE_FILE)
    realpath, fspath, getcwd = os.path.realpath, os.fspath, os.getcwd
    getframe = sys._getframe
    sent = [0]
    known: dict[str, bool] = {}

    def installed(filename: str) -> bool:
        if filename not in known:
            path = realpath(filename)
            known[filename] = not any(_within(path, root) for root in own) and any(
                _within(path, root) for root in library
            )
        return known[filename]

    def importing_a_library() -> bool:
        try:
            frame, library_code = getframe(2), False
        except ValueError:  # no Python frame below the hook's
            return False
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.startswith(IMPORT_MACHINERY):
                if library_code:
                    return True
            elif installed(filename):
                library_code = True
            else:
                return False
            frame = frame.f_back
        return False

    def hook(event, args):
        if event in STARTS:
            if importing_a_library():
                raise PermissionError(1, "the sandbox starts no process and opens no socket")
            return
        if event not in WATCHED or sent[0] >= 100 or not args:
            return
        try:
            target = args[0]
            if isinstance(target, int):
                return
            target = fspath(target)
            if isinstance(target, bytes):
                target = target.decode("utf-8", "replace")
            path = realpath(target if target.startswith("/") else f"{getcwd()}/{target}")
            writing = event not in ("open", "os.listdir", "os.scandir")
            if event == "open":
                mode, flags = (list(args) + [None, None])[1:3]
                writing = bool(
                    (isinstance(mode, str) and set(mode) & set("wax+"))
                    or (isinstance(flags, int) and flags & WRITE_FLAGS)
                )
            if not any(_within(path, root) for root in (writable if writing else readable)):
                if importing_a_library():
                    return
                sent[0] += 1
                supervisor.send_event(end, "open", ("write " if writing else "read ") + path)
        except Exception:  # noqa: BLE001 - an audit hook must never break the code it watches
            return

    return hook


def report_blocked_import(end, name: str) -> None:
    supervisor.send_event(end, "import", name)
