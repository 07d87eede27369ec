"""Windows, as far as the student path can tell, on Linux: no POSIX-only module, call or signal.

Put on PYTHONPATH (tests/grader/test_platforms.py), it is loaded by every interpreter that path
reaches, the children of `grader check` too. It cannot make Linux Windows: the Windows-only ways
(taskkill, TerminateProcess) are not there either, which is why Popen.kill below stands in for
TerminateProcess.
"""

import importlib.abc
import os
import select
import signal
import socket
import subprocess
import sys

BLOCKED = {"resource", "fcntl", "termios", "pwd", "grp", "tty", "pty", "syslog", "crypt"}


class _NotOnWindows(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {fullname!r} (simulated Windows)")
        return None


for name in BLOCKED:
    sys.modules.pop(name, None)
sys.meta_path.insert(0, _NotOnWindows())
for module, names in (
    (
        os,
        "fork forkpty register_at_fork setsid setpgid getpgid killpg getuid geteuid getgid "
        "setuid setgid setgroups chown lchown fchown sysconf WNOHANG",
    ),
    (
        signal,
        "SIGKILL SIGXFSZ SIGHUP SIGQUIT SIGUSR1 SIGUSR2 SIGALRM SIGCHLD SIGPIPE "
        "pthread_sigmask pthread_kill setitimer alarm",
    ),
    (select, "poll epoll"),
    (socket, "AF_UNIX SOCK_SEQPACKET send_fds recv_fds"),
):
    for name in names.split():
        if hasattr(module, name):
            delattr(module, name)
# Popen.kill is TerminateProcess on Windows; on POSIX it names SIGKILL, removed above.
subprocess.Popen.kill = lambda self: self.send_signal(9)
