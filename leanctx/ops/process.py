"""Running a command for ctx_shell: its own session and process group, stdin closed, stdout
and stderr drained by threads that keep the first and last half of ``cap`` bytes each (the
middle is counted and said to be missing), a timeout that kills the whole group (SIGTERM, then
SIGKILL; exit code 124), and shell-style exit codes for signals (128 + N).

The command is in a session of its own, so a signal sent to lean-ctx does not reach it. Ctrl-C
(``KeyboardInterrupt``) kills its group and re-raises. SIGTERM and SIGHUP do the same as a
timeout: while the command runs (in the main thread only: Python runs handlers there, and only
there can they be installed) lean-ctx handles them by killing the command's group; the run is
then returned with exit code 128 + N and a note saying so (``terminated``), and the previous
handlers are back in place before it returns, so a second signal ends lean-ctx as it would
have. A signal the process ignores (``nohup``'s SIGHUP) stays ignored.

Output is decoded as UTF-8 with ``surrogateescape``: a byte that is not UTF-8 arrives as a lone
surrogate U+DC80–U+DCFF, so the exact bytes of binary output survive to be archived
(``leanctx.context.shell.binary``); whatever is shown as text shows them as U+FFFD."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections import deque
from typing import IO, Self

import msgspec

__all__ = ["DEFAULT_MAX_OUTPUT_BYTES", "TERMINATING_SIGNALS", "TIMEOUT_EXIT_CODE", "Run", "execute"]

TIMEOUT_EXIT_CODE = 124  # as timeout(1) reports it
DEFAULT_MAX_OUTPUT_BYTES = 8 * 1024 * 1024  # per stream; beyond it the middle is not kept
KILL_GRACE_SECONDS = 2.0  # SIGTERM, then SIGKILL after this
EOF_GRACE_SECONDS = 2.0  # after the process exits, how long background children may hold its pipes
_CHUNK = 65536
TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # handled while a command runs (Ctrl-C: KeyboardInterrupt)


class _Reader(threading.Thread):
    """Drains one pipe; keeps the first and last ``cap/2`` bytes and counts the rest."""

    def __init__(self, fd: int, cap: int) -> None:
        super().__init__(daemon=True)
        self.fd = fd
        self.half = max(cap // 2, 1)
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_bytes = 0
        self.dropped = 0
        self.lock = threading.Lock()

    def run(self) -> None:
        try:
            while True:
                chunk = os.read(self.fd, _CHUNK)
                if not chunk:
                    break
                with self.lock:
                    self._add(chunk)
        except OSError:
            pass
        finally:
            try:
                os.close(self.fd)
            except OSError:
                pass

    def _add(self, chunk: bytes) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_bytes += len(chunk)
        while self.tail_bytes > self.half:
            first = self.tail[0]
            excess = self.tail_bytes - self.half
            if len(first) <= excess:
                self.tail.popleft()
                self.tail_bytes -= len(first)
                self.dropped += len(first)
            else:
                self.tail[0] = first[excess:]
                self.tail_bytes -= excess
                self.dropped += excess

    def text(self) -> str:
        with self.lock:
            head, tail, dropped = bytes(self.head), b"".join(self.tail), self.dropped
        if not dropped:
            return (head + tail).decode("utf-8", "surrogateescape")
        h = head.decode("utf-8", "surrogateescape")
        if not h.endswith("\n"):
            h += "\n"
        note = f"[lean-ctx: {dropped} bytes of output in the middle were not captured (over the capture limit)]\n"
        return h + note + tail.decode("utf-8", "surrogateescape")


class Run(msgspec.Struct):
    stdout: str
    stderr: str
    exit_code: int
    duration_ms: float
    timed_out: bool = False
    note: str | None = None
    terminated: int | None = None  # the signal (SIGTERM, SIGHUP) lean-ctx received, which killed the command


class _Terminated(BaseException):
    """Raised (once) by ``_SignalGuard``'s handler in the main thread while it waits."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _SignalGuard:
    """SIGTERM and SIGHUP while a command runs (see the module doc). Before ``armed`` (the
    command is being started) a signal is only remembered; armed, the handler disarms itself and
    raises ``_Terminated`` once, which interrupts the wait. Outside the main thread: nothing."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.armed = False
        self.handled = False  # the command was killed for it (else it is passed on when the guard ends)
        self.previous: dict[int, signal.Handlers | object] = {}

    def __enter__(self) -> Self:
        if threading.current_thread() is not threading.main_thread():
            return self
        for signum in TERMINATING_SIGNALS:
            prev = signal.getsignal(signum)
            if prev is signal.SIG_IGN or prev is None:  # ignored (nohup), or set outside Python: left alone
                continue
            self.previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, frame: object) -> None:
        if self.received is None:
            self.received = signum
        if self.armed:
            self.armed = False
            raise _Terminated(signum)

    def __exit__(self, *exc: object) -> None:
        self.armed = False
        for signum, prev in self.previous.items():
            signal.signal(signum, prev)  # type: ignore[arg-type]
        if self.received is not None and not self.handled:  # came as the command ended: not lost
            signal.raise_signal(self.received)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, then SIGKILL it if it is still there after a grace period."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(KILL_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pass
    try:  # the leader may be gone while others in its group are not
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


StdinSource = int | IO[bytes] | IO[str] | None


def stdin_fd(source: StdinSource) -> int | None:
    """The file descriptor of ``source`` (an fd or a file object), or None when it has none."""
    if source is None or isinstance(source, bool):
        return None
    if isinstance(source, int):
        return source if source >= 0 else None
    try:
        return source.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def execute(argv: list[str], cwd: str | None, env: dict[str, str], timeout: float | None, cap: int,
            stdin: StdinSource = None) -> Run:
    """Run ``argv``; its standard input is ``stdin`` (the CLI passes its own when it is not a
    terminal: the command reads the descriptor itself, so input streams and ``head -1`` does not
    wait for the rest), else empty (``/dev/null``: MCP and HTTP calls have none)."""
    fd = stdin_fd(stdin)
    t0 = time.perf_counter()
    with _SignalGuard() as guard:
        try:
            proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL if fd is None else fd,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group: a timeout kills every child it started
            )
        except FileNotFoundError:
            return Run("", f"lean-ctx: {argv[0]}: command not found\n", 127, (time.perf_counter() - t0) * 1000)
        except PermissionError:
            return Run("", f"lean-ctx: {argv[0]}: permission denied\n", 126, (time.perf_counter() - t0) * 1000)
        assert proc.stdout is not None and proc.stderr is not None
        readers = [_Reader(os.dup(proc.stdout.fileno()), cap), _Reader(os.dup(proc.stderr.fileno()), cap)]
        proc.stdout.close()
        proc.stderr.close()
        for r in readers:
            r.start()
        try:
            outcome = _wait(proc, timeout, guard)
        except BaseException:  # Ctrl-C in the CLI: the child is in its own session and would not get it
            _kill_group(proc)
            raise
        if outcome is not None:
            _kill_group(proc)
    return _finish(proc, readers, outcome, timeout, t0)


def _wait(proc: subprocess.Popen[bytes], timeout: float | None, guard: _SignalGuard) -> str | int | None:
    """Wait for the command: None when it exited, "timeout", or the signal that terminated
    lean-ctx meanwhile. Whatever the moment the signal comes, it is caught here (raised once)."""
    outcome: str | int | None = None
    try:
        try:
            guard.armed = True
            if guard.received is not None:  # it came while the command was being started
                guard.armed = False
                raise _Terminated(guard.received)
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            outcome = "timeout"
        guard.armed = False
    except _Terminated as t:
        guard.armed = False
        guard.handled = True
        outcome = t.signum
    except BaseException:
        guard.armed = False
        raise
    return outcome


def _finish(proc: subprocess.Popen[bytes], readers: list[_Reader], outcome: str | int | None,
            timeout: float | None, t0: float) -> Run:
    """The ``Run`` of a command that exited or was killed (``outcome``: see ``_wait``)."""
    note = None
    timed_out = outcome == "timeout"
    terminated = outcome if isinstance(outcome, int) else None
    if timed_out:
        note = f"[timed out after {timeout:g}s: the command's process group was killed]"
    elif terminated is not None:
        name = signal.Signals(terminated).name
        note = f"[terminated: lean-ctx received {name}; the command's process group was killed]"
    duration = (time.perf_counter() - t0) * 1000
    deadline = time.monotonic() + EOF_GRACE_SECONDS
    for r in readers:
        r.join(max(0.0, deadline - time.monotonic()))
    if any(r.is_alive() for r in readers):
        extra = "[the command exited but processes it started in the background still hold its output; output after exit is not shown]"
        note = f"{note}\n{extra}" if note else extra
    code = TIMEOUT_EXIT_CODE if timed_out else 128 + terminated if terminated is not None else proc.returncode
    if code < 0:  # killed by a signal: report it the way a shell does
        code = 128 - code
    return Run(readers[0].text(), readers[1].text(), code, duration, timed_out, note, terminated)
