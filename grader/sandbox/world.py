"""A world of its own for each sandboxed child: namespaces, a user of its own, and death with
its parent. Entered before the sandbox proper (grader.sandbox.enter), in two steps.

`unshare_world(job)`, while the child is still one thread (a forked child at once; a fresh
interpreter before it imports TensorFlow, which starts threads):
- a new IPC namespace: the System V objects and POSIX message queues it makes are its own,
  none of its classmates' is visible, and they die with it;
- a new network namespace: no interface but a loopback that is down, and abstract Unix sockets
  of its own (sockets of every family are refused by the filter all the same);
- as an ordinary user, a user namespace first (the kernel lets an unprivileged process make the
  other two only inside one), its user and group mapped to themselves: it holds no capability
  outside it;
- as root, a mount namespace, where each folder that the child's own user could not enter on
  the way to what it must read (a 0700 /root holding the interpreter, a 0700 temporary folder
  holding a venv or the results) is covered with a small tmpfs it can enter but not list, into
  which only the entries on the way are bound back: the child's user reaches the installation
  with nothing changed on the real file system, and the covers die with the child.

`become_own_user(job)`, once the limits are set: as root, a user and group of its own
(`child_uid`, no supplementary groups; leaving uid 0 clears every capability), the
child's folder handed to it; then, as any user, SIGKILL when its parent dies (after the change
of user, which clears that setting): a child never outlives the helper or grader that started it.

No PID namespace: the first process forked into one is its pid 1, so the child would have to
fork once more to be inside it. What one would give is had otherwise: the filter lets a child
signal, limit, reprioritise or pin only itself and start no process, and Landlock lets it read
only its own /proc/<pid>.
"""

from __future__ import annotations

import ctypes
import os
import platform
import stat
import sys

from grader.i18n import _

SLOT_UID_BASE = 61000
PRIVATE_UID_BASE, PID_SPAN, SLOTS = 1 << 28, 1 << 22, 256
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x08000000, 0x40000000
CLONE_NEWUSER = 0x10000000
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG = 1
COVER_OPTIONS = b"mode=0711,size=64k,nr_inodes=256"

_entered: dict = {}


def linux() -> bool:
    return platform.system() == "Linux"


def root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def slot_uid(job: dict) -> int | None:
    """The user id a sandboxed child runs as where the grader is root (None: its own user):
    the one its scheduler chose (`child_uid`)."""
    if job.get("sandbox") is None or not linux() or not root():
        return None
    return int(job["uid"]) if job.get("uid") is not None else child_uid(int(job.get("slot", 0)))


def child_uid(slot: int) -> int:
    """A user id no other grader on this machine hands out, for the child in `slot` of the
    scheduler running in this process: a block of SLOTS ids per process id, above any real
    user's (two root graders at once, as `pytest -n 2` runs them, must never share an id: each
    scheduler kills whatever runs as the ids it handed out). Where the kernel's uid map is
    narrower (a container), the block SLOT_UID_BASE + slot, shared."""
    uid = PRIVATE_UID_BASE + (os.getpid() % PID_SPAN) * SLOTS + slot % SLOTS
    return uid if _mapped(uid) else SLOT_UID_BASE + slot % SLOTS


def _mapped(uid: int) -> bool:
    try:
        with open("/proc/self/uid_map") as handle:
            ranges = [tuple(map(int, line.split())) for line in handle if line.strip()]
    except OSError:
        return False
    return any(inside <= uid < inside + count for inside, _, count in ranges)


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_void_p]
    return libc


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def unshare_world(job: dict) -> None:
    """Step one (see the module's docstring); once per process, a no-op for trusted code."""
    if job.get("sandbox") is None or not linux() or "world" in _entered:
        return
    _entered["world"] = True
    covers = blocked_on_the_way(reachable_paths(job), slot_uid(job))
    if available() is not None:  # the filter alone holds; status() said so to the caller
        if covers:  # never run as root for want of a way to reach the installation
            raise OSError(own_user_problem())
        return
    uid, gid = os.getuid(), os.getgid()
    libc = _libc()
    _unshare(libc, _world_flags())
    if root():
        _cover(libc, covers)
        return
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)


def _world_flags() -> int:
    """The namespaces of a child's world: as root a mount namespace (for the covers), as an
    ordinary user a user namespace (without which it may make none of the others)."""
    own = CLONE_NEWNS if root() else CLONE_NEWUSER
    return own | CLONE_NEWIPC | CLONE_NEWNET


def _unshare(libc, flags: int) -> None:
    """New namespaces for this process; a new mount namespace is made private at once, so
    that nothing mounted in it reaches the machine's."""
    _check(libc.unshare(flags), "unshare")
    if flags & CLONE_NEWNS:
        _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate")


def installation() -> list[str]:
    """The folders of the Python installation a child reads, as grader.sandbox.grants reads
    them: the installation's own roots and the absolute entries of sys.path."""
    from grader import sandbox

    roots = set(sandbox.installation_roots())
    roots.update(p for p in sys.path if p and os.path.isabs(p))
    return sorted(roots)


def own_user_problem() -> str | None:
    """Why children of a root grader could not run as users of their own here (None: they
    can), with what to do about it."""
    if not linux() or not root():
        return None
    blocked = blocked_on_the_way(installation(), SLOT_UID_BASE)
    if not blocked or available() is None:
        return None
    folders = ", ".join(sorted(blocked))
    return _(
        "the Python installation lies in folders other users cannot enter ({folders}) and this "
        "machine gives no mount namespace to reach it otherwise ({why}); install Python where "
        "other users can read it (/usr, /opt), or run the grader as an ordinary user",
        folders=folders,
        why=available(),
    )


def reachable_paths(job: dict) -> list[str]:
    """What a child must reach: the installation (as grader.sandbox.grants reads it), its
    folder, the submission's folder and its cases."""
    from grader import sandbox

    policy = job.get("sandbox") or {}
    return sorted(
        {
            *installation(),
            *sandbox.SYSTEM_FOLDERS,
            *policy.get("read", ()),
            job["workdir"],
            *(os.path.dirname(part.get("module", job["module"])) for part in job["parts"]),
            *(part["cases"] for part in job["parts"]),
        }
    )


def can_enter(info: os.stat_result, uid: int) -> bool:
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == uid:  # a slot user's group has its number
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def blocked_on_the_way(paths: list[str], uid: int | None) -> dict[str, set[str]]:
    """Each folder `uid` cannot enter on the way to one of `paths`: the names below it that
    lead on. Empty where the grader is not root."""
    if uid is None:
        return {}
    blocked: dict[str, set[str]] = {}
    for path in paths:
        path = os.path.realpath(path)
        if not os.path.exists(path):
            continue
        folder = "/"
        for name in path.strip("/").split("/"):
            if not name:
                continue
            if not can_enter(os.stat(folder), uid):
                blocked.setdefault(folder, set()).add(name)
            folder = os.path.join(folder, name)
    return blocked


def _cover(libc, blocked: dict[str, set[str]]) -> None:
    """Cover each blocked folder with an enterable tmpfs and bind the entries on the way back.
    Every entry is opened before any cover, and folders are covered from the top down, so that
    a blocked folder inside another is bound back, then covered in turn."""
    order = sorted(blocked, key=lambda folder: folder.count("/") - (folder == "/"))
    if "/" in blocked:
        raise OSError(_("the root folder itself cannot be entered by other users"))
    opened = {}
    try:
        for folder in order:
            for name in blocked[folder]:
                opened[folder, name] = os.open(os.path.join(folder, name), os.O_PATH | os.O_CLOEXEC)
        for folder in order:
            target = folder.encode()
            _check(
                libc.mount(b"tmpfs", target, b"tmpfs", MS_NOSUID | MS_NODEV, COVER_OPTIONS),
                f"mount a cover on {folder}",
            )
            for name in sorted(blocked[folder]):
                entry, fd = os.path.join(folder, name), opened[folder, name]
                if stat.S_ISDIR(os.fstat(fd).st_mode):
                    os.mkdir(entry, 0o711)
                else:
                    os.close(os.open(entry, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
                source = f"/proc/self/fd/{fd}".encode()
                _check(
                    libc.mount(source, entry.encode(), None, MS_BIND | MS_REC, None),
                    f"bind {entry}",
                )
    finally:
        for fd in opened.values():
            os.close(fd)


def reach_installation(uid: int) -> None:
    """In a forked process of a root grader that is about to become `uid` and must import
    what the grader did not load (Gradescope's file helper: nbformat reads its schemas lazily),
    a mount namespace where `uid` reaches the Python installation, covered as `unshare_world`
    covers it. Nothing where it already can, where the grader is not root, or where there is
    no mount namespace (what fails then is said where it fails)."""
    if not linux() or not root():
        return
    from grader import sandbox

    covers = blocked_on_the_way([*installation(), *sandbox.SYSTEM_FOLDERS], uid)
    if not covers or available() is not None:
        return
    libc = _libc()
    _unshare(libc, CLONE_NEWNS)
    _cover(libc, covers)


def become_own_user(job: dict) -> None:
    """Step two (see the module's docstring)."""
    if job.get("sandbox") is None or not linux():
        return
    uid = slot_uid(job)
    if uid is not None:
        workdir = job["workdir"]
        # Never through a link: an earlier child of this unit may have left one to anywhere.
        for folder, folders, files in os.walk(workdir):
            for name in [*folders, *files]:
                os.chown(os.path.join(folder, name), uid, uid, follow_symlinks=False)
        os.chown(workdir, uid, uid, follow_symlinks=False)
        os.chmod(workdir, 0o700)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        # A slot's user has no entry in /etc/passwd: without a HOME of its own, `~` would stay
        # `~`, and Keras, imported next, would make `~/.keras/` in whatever folder the grader
        # ran from (a kit's checkout).
        os.environ["HOME"] = workdir
        os.chdir(workdir)
        # A change of user id makes a process non-dumpable, and its /proc/<pid> root's.
        from grader.sandbox import protect_this_process

        protect_this_process(protect=False)
    parent = os.getppid()
    _check(_libc().prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:  # the parent died before the setting took hold
        os._exit(1)


def available() -> str | None:
    """Why children cannot have a world of their own here (None: they can). Tried once, in a
    forked process, as this process's user would."""
    if not linux():
        return _("{system} has no Linux namespaces", system=platform.system())
    if not hasattr(os, "fork"):
        return _("this Python cannot fork to try them")
    if "available" not in _entered:
        _entered["available"] = _try_in_a_fork()
    return _entered["available"]


def _try_in_a_fork() -> str | None:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        message = b""
        try:
            _unshare(_libc(), _world_flags())  # exactly what a child will do
        except BaseException as error:  # noqa: BLE001 - the answer is the message
            message = str(error).encode()
        finally:
            os.write(write_end, message[:500])
            os._exit(0)
    os.close(write_end)
    message = os.read(read_end, 600).decode("utf-8", "replace")
    os.close(read_end)
    os.waitpid(pid, 0)
    return message or None
