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

Servers (``lean-ctx mcp``, ``lean-ctx serve``) run commands in worker threads, where no signal
handler can help; two things stop those. **Cancel**: a ``threading.Event`` given to ``execute``
(or set for the calling context with ``cancel_on``: the MCP server sets it when the client
cancels the call) kills the group as a timeout does; the run ends with exit code 130 (128 +
SIGINT, what a shell reports for a command interrupted by its user) and a note saying it was
cancelled, its output so far captured as usual. **Shutdown**: every running command is in a
registry of this process (registered when spawned, removed when reaped); ``stop_all(signum)``
(non-blocking, safe in a signal handler) SIGTERMs every group and makes each run end as
terminated by ``signum`` (128 + N, the note as above), and ``kill_all`` does that and SIGKILLs
whatever is still there after the grace. A waiting thread looks at its cancel event and at the
registry every ``POLL_SECONDS``.

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
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import IO, Self

import msgspec

__all__ = ["CANCELLED_EXIT_CODE", "DEFAULT_MAX_OUTPUT_BYTES", "TERMINATING_SIGNALS", "TIMEOUT_EXIT_CODE", "Run",
           "cancel_on", "execute", "kill_all", "running", "stop_all"]

TIMEOUT_EXIT_CODE = 124  # as timeout(1) reports it
CANCELLED_EXIT_CODE = 128 + signal.SIGINT  # 130: the call was cancelled, as a shell reports an interrupted command
POLL_SECONDS = 0.05  # how often a waiting thread looks at its cancel event and the registry
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
    cancelled: bool = False  # the call that started it was cancelled: its group was killed


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


class _Running:
    """A command in the registry (from before it is spawned: a stop while it starts is not
    missed): its process and why it must stop ("cancelled", or the signal given to
    ``stop_all``; the first reason wins)."""

    __slots__ = ("proc", "reason")

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.reason: str | int | None = None


_running: dict[int, _Running] = {}
_running_lock = threading.Lock()
_cancel: ContextVar[threading.Event | None] = ContextVar("leanctx_process_cancel", default=None)


@contextmanager
def cancel_on(event: threading.Event) -> Iterator[None]:
    """Within this block (this thread, this context), ``execute`` is cancelled by ``event``."""
    token = _cancel.set(event)
    try:
        yield
    finally:
        _cancel.reset(token)


def running() -> list[int]:
    """The process group ids of the commands running in this process."""
    with _running_lock:
        return [r.proc.pid for r in _running.values() if r.proc is not None]


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def stop_all(signum: int | None = signal.SIGTERM) -> int:
    """End every command running in this process (a server shutting down): each group gets
    SIGTERM now and each run ends as terminated by ``signum`` (None: as cancelled, the server's
    client having left); their threads escalate to SIGKILL after the grace and return the runs.
    Does not wait (a signal handler may call it); returns how many commands there were."""
    with _running_lock:
        runs = list(_running.values())
        for r in runs:
            if r.reason is None:
                r.reason = "cancelled" if signum is None else int(signum)
    for r in runs:
        if r.proc is not None:  # one being spawned sees its reason once it is
            _signal_group(r.proc.pid, signal.SIGTERM)
    return len(runs)


def kill_all(signum: int | None = signal.SIGTERM, grace: float = KILL_GRACE_SECONDS) -> int:
    """``stop_all``, then wait up to ``grace`` for the commands to be reaped and SIGKILL the groups
    of those that are not: no command outlives the server that started it."""
    n = stop_all(signum)
    deadline = time.monotonic() + grace
    while _running and time.monotonic() < deadline:
        time.sleep(0.02)
    for pgid in running():
        _signal_group(pgid, signal.SIGKILL)
    return n


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
            stdin: StdinSource = None, cancel: threading.Event | None = None) -> Run:
    """Run ``argv``; its standard input is ``stdin`` (the CLI passes its own when it is not a
    terminal: the command reads the descriptor itself, so input streams and ``head -1`` does not
    wait for the rest), else empty (``/dev/null``: MCP and HTTP calls have none). ``cancel``
    (default: the one ``cancel_on`` set) kills the command when set (see the module doc)."""
    fd = stdin_fd(stdin)
    if cancel is None:
        cancel = _cancel.get()
    t0 = time.perf_counter()
    entry = _Running()
    with _running_lock:
        _running[id(entry)] = entry
    try:
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
            with _running_lock:
                entry.proc = proc
            assert proc.stdout is not None and proc.stderr is not None
            readers = [_Reader(os.dup(proc.stdout.fileno()), cap), _Reader(os.dup(proc.stderr.fileno()), cap)]
            proc.stdout.close()
            proc.stderr.close()
            for r in readers:
                r.start()
            try:
                outcome = _wait(proc, timeout, guard, entry, cancel)
            except BaseException:  # Ctrl-C in the CLI: the child is in its own session and would not get it
                _kill_group(proc)
                raise
            if outcome is not None:
                _kill_group(proc)
    finally:
        with _running_lock:
            _running.pop(id(entry), None)
    return _finish(proc, readers, outcome, timeout, t0)


def _wait(proc: subprocess.Popen[bytes], timeout: float | None, guard: _SignalGuard, entry: _Running,
          cancel: threading.Event | None) -> str | int | None:
    """Wait for the command: None when it exited, "timeout", "cancelled", or the signal that
    terminated lean-ctx meanwhile (caught here, raised once, whatever the moment it comes) or that
    ``stop_all`` was given."""
    outcome: str | int | None = None
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        try:
            guard.armed = True
            if guard.received is not None:  # it came while the command was being started
                guard.armed = False
                raise _Terminated(guard.received)
            while True:
                outcome = _stop_reason(entry, cancel)
                if outcome is not None:
                    break
                step = POLL_SECONDS if deadline is None else min(POLL_SECONDS, deadline - time.monotonic())
                if step <= 0:
                    outcome = "timeout"
                    break
                try:
                    proc.wait(step)
                    break
                except subprocess.TimeoutExpired:
                    pass
        finally:
            guard.armed = False
    except _Terminated as t:
        guard.handled = True
        outcome = t.signum
    if outcome is None:  # it ended as it was being stopped (stop_all's SIGTERM): said so
        outcome = _stop_reason(entry, cancel)
    return outcome


def _stop_reason(entry: _Running, cancel: threading.Event | None) -> str | int | None:
    with _running_lock:
        if entry.reason is None and cancel is not None and cancel.is_set():
            entry.reason = "cancelled"
        return entry.reason


def _finish(proc: subprocess.Popen[bytes], readers: list[_Reader], outcome: str | int | None,
            timeout: float | None, t0: float) -> Run:
    """The ``Run`` of a command that exited or was killed (``outcome``: see ``_wait``)."""
    note = None
    timed_out = outcome == "timeout"
    cancelled = outcome == "cancelled"
    terminated = outcome if isinstance(outcome, int) else None
    if timed_out:
        note = f"[timed out after {timeout:g}s: the command's process group was killed]"
    elif cancelled:
        note = "[cancelled: the call that started it was cancelled; the command's process group was killed]"
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
    code = (TIMEOUT_EXIT_CODE if timed_out else CANCELLED_EXIT_CODE if cancelled
            else 128 + terminated if terminated is not None else proc.returncode)
    if code < 0:  # killed by a signal: report it the way a shell does
        code = 128 - code
    return Run(readers[0].text(), readers[1].text(), code, duration, timed_out, note, terminated, cancelled)
