"""No framework start-up noise on any command: `install()` at each entry point, before
TensorFlow is imported (the grader's command line, the Gradescope autograder, its setup check,
the demos).

TF_CPP_MIN_LOG_LEVEL quiets TensorFlow's own logging, but not the lines its C++ libraries write
to file descriptor 2 before absl's logging is set up (TensorFlow 2.18 and later: "I0000
00:00:1795699351.117137 14154 port.cc:153] oneDNN custom operations are on...", "Could not
find cuda drivers...", "This TensorFlow binary is optimized..."). So descriptor 2 itself is
filtered: it becomes a pipe (a pseudo-terminal when it was a terminal, so that progress bars
and colours stay as they were) that a thread copies to the real stderr, dropping only the
known informational start-up lines. Every other line passes, a traceback and real errors
included; children that inherit descriptor 2 are filtered too. Imports nothing heavy.
"""

from __future__ import annotations

import atexit
import os
import re
import select
import sys
import threading

# The start-up lines that say nothing about the user's work: informational and warning lines
# in absl's format from TensorFlow's libraries, the CPU/GPU notices, the one error line a
# machine without a GPU always gets, and oneDNN's error-level notice that it falls back to
# Eigen for an int64 op on a CPU without AVX-512 (the result is the same). An error or fatal
# line of any other kind passes.
_DROPPED = re.compile(
    rb"^(?:[IW]\d{4} \d+:\d+:\d+\.\d+\s+\d+ [\w.+-]+:\d+\] .*"
    rb"|E\d{4} \d+:\d+:\d+\.\d+\s+\d+ cuda_(?:platform|executor|diagnostics)\.cc:\d+\] "
    rb"(?:failed call to cuInit|.*(?:CUDA|cuda|kernel driver|GPU)).*"
    rb"|E\d{4} \d+:\d+:\d+\.\d+\s+\d+ util\.cc:\d+\] oneDNN supports \w+ only on platforms "
    rb"with [\w-]+\. Falling back to the default Eigen-based implementation if present\."
    rb"|WARNING: All log messages before absl::InitializeLog\(\) is called.*"
    rb"|To enable the following instructions: .* rebuild TensorFlow with the appropriate "
    rb"compiler flags\."
    rb"|.*Unable to register cu(?:DNN|FFT|BLAS) factory.*"
    rb")\r?$"
)
# Set in the environment once descriptor 2 is filtered: children that inherit it need no
# filter of their own.
MARK = "GRADER_QUIET_STDERR"
_WAIT = 0.2  # seconds a line without its end waits before it is passed on as it is

_pump: _Pump | None = None


def dropped(line: bytes) -> bool:
    """Whether `line` (without its newline) is a known informational start-up line."""
    return _DROPPED.match(line) is not None


class _Pump(threading.Thread):
    def __init__(self, source: int, target: int):
        super().__init__(name="grader-quiet-stderr", daemon=True)
        self.source, self.target = source, target
        self.stopping = threading.Event()
        self.pending = b""

    def run(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.source], [], [], _WAIT)
            except (OSError, ValueError):
                break
            if not ready:
                self._flush_partial()
                if self.stopping.is_set():
                    break
                continue
            try:
                chunk = os.read(self.source, 65536)
            except OSError:  # a pseudo-terminal whose last writer is gone
                chunk = b""
            if not chunk:
                break
            self.pending += chunk
            *lines, self.pending = self.pending.split(b"\n")
            self._write(b"".join(line + b"\n" for line in lines if not dropped(line)))
        self._flush_partial()

    def _flush_partial(self) -> None:
        """A line still without its end (a progress bar's, a prompt) is passed on as it is."""
        if self.pending and not dropped(self.pending):
            self._write(self.pending)
        self.pending = b""

    def _write(self, data: bytes) -> None:
        while data:
            try:
                data = data[os.write(self.target, data) :]
            except OSError:
                return


def install() -> None:
    """Quiet TensorFlow's logging and filter descriptor 2 (see the module's words). Call it
    before TensorFlow is imported; calling it again does nothing."""
    global _pump
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if _pump is not None or os.environ.get(MARK) or not _stderr_is_descriptor_2():
        return
    try:
        target = os.dup(2)
    except OSError:  # no stderr at all
        return
    try:
        read_end, write_end = _channel(target)
    except OSError:
        os.close(target)
        return
    sys.stderr.flush()
    os.dup2(write_end, 2)
    os.close(write_end)
    os.environ[MARK] = "1"
    _pump = _Pump(read_end, target)
    _pump.start()
    atexit.register(_finish)


def _stderr_is_descriptor_2() -> bool:
    """Whether this is a program of its own, whose sys.stderr writes to descriptor 2 (not a
    test runner's capture, nor Click's CliRunner, which must be left as they are)."""
    try:
        return sys.stderr is not None and sys.stderr.fileno() == 2
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return False


def _channel(target: int) -> tuple[int, int]:
    """A pipe, or a pseudo-terminal of the terminal's size when stderr is a terminal (raw, so
    that it writes what it is given: the terminal itself turns newlines into line ends)."""
    if os.isatty(target) and sys.platform != "win32":
        import fcntl
        import pty
        import termios
        import tty

        read_end, write_end = pty.openpty()
        tty.setraw(write_end)
        try:
            size = fcntl.ioctl(target, termios.TIOCGWINSZ, b"\0" * 8)
            fcntl.ioctl(write_end, termios.TIOCSWINSZ, size)
        except OSError:
            pass
        return read_end, write_end
    return os.pipe()


def _finish() -> None:
    """At exit: this process's stderr goes straight to the real one again, and what is still
    in the pipe (a traceback printed just before exit) is passed on before the process ends."""
    pump = _pump
    if pump is None or not pump.is_alive():  # a forked child: the thread stayed in its parent
        return
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os.dup2(pump.target, 2)
    pump.stopping.set()
    pump.join(timeout=5)
