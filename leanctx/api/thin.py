"""The thin client: hand a short CLI call to the running daemon, or say "run it yourself".

This module imports only the standard library, and as little of it as it can: it runs at the
start of every ``lean-ctx`` process, before typer, msgspec or the command bus are imported, so
that a forwarded call costs an interpreter start and one round trip on a Unix socket.

``forward(argv)`` returns the exit code of a call the daemon ran (its output already written to
this process's stdout and stderr), or None when the call must run in-process: the verb is not
on the allowlist (``FORWARD``), it would read an interactive stdin, ``$LEAN_CTX_NO_DAEMON`` is
set, no daemon listens on the socket (none started, or it crashed and left a stale socket), or
the daemon declined it (another lean-ctx version, a working directory it cannot enter).

Wire format (version 1; ``leanctx.api.daemon.protocol`` is the server side)::

    frame    = u32 big-endian length ‖ bytes
    request  = frame(head) ‖ frame(stdin bytes)
    head     = NUL-joined fields (os.fsencode; argv, environment and paths never contain NUL):
               MAGIC, op ("run" | "status" | "stop"), ``build_id()``, cwd, parent pid, umask
               (octal), tty flags of stdin/stdout/stderr ("0"/"1" each), terminal "COLSxLINES"
               (or ""), the number of environment entries N, N × "NAME=VALUE", then argv
    response = frame(NUL-joined MAGIC, status ("ok" | "fallback": run it yourself), exit code)
               ‖ frame(stdout bytes) ‖ frame(stderr bytes)
"""

from __future__ import annotations

import os
import sys

try:  # the C module: ``socket`` itself would add enum and selectors to every start (~2 ms)
    import _socket as _sock
except ImportError:  # pragma: no cover - CPython always has it
    import socket as _sock  # type: ignore[no-redef]

MAGIC = b"lean-ctx-daemon/1"
SOCKET_NAME = "lean-ctx.sock"
PID_NAME = "lean-ctx.pid"
LOCK_NAME = "lean-ctx.lock"
NO_DAEMON_ENV = "LEAN_CTX_NO_DAEMON"
TIMEOUT_ENV = "LEAN_CTX_DAEMON_TIMEOUT"
MAX_FRAME = 1 << 31

# Command paths the CLI hands to the daemon: short calls that neither block, stream, run other
# programs nor need a terminal, and whose answer depends on the calling process only through what
# the request carries (working directory, environment, umask, parent pid: ``overview`` and the
# ``session`` verbs read the agent and session from them). Everything else (``chat wait``,
# ``events tail --follow``, ``shell``, ``serve``, ``mcp``, ``daemon``, ``setup``, ``replay``,
# ``hooks``, ``--help``, ...) runs in-process, and so do ``doctor`` (it checks this installation
# as the caller sees it: a long-lived daemon would answer with the modules it imported at its
# start, and about itself) and ``session precompact`` / ``hooks precompact`` (they read the hook's
# JSON on stdin with a timeout and look for the client among the *calling* process's ancestors,
# ``leanctx.compaction_hook.ancestors``). tests/api/test_daemon_thin.py checks each against the tree.
FORWARD = frozenset(
    [("chat", v) for v in ("channels", "check", "export", "init", "lock", "locks", "peek", "post", "read",
                           "recover", "roster", "state", "unlock")]
    + [("chat", "task", v) for v in ("block", "claim", "create", "done", "list", "recover", "release", "renew",
                                     "show", "update")]
    + [("chat", "event", "post"), ("chat", "event", "read")]
    + [("agent", v) for v in ("budget", "claim", "deposit", "deregister", "diary", "heartbeat", "ledger", "list",
                              "recall-diary", "register", "release", "sync")]
    + [("events", "lineage"), ("events", "search"), ("events", "tail"), ("db", "info")]
    + [(v,) for v in ("read", "search", "tree", "edit", "compress", "expand", "gain", "overview")]
    + [("session", v) for v in ("decision", "diff", "finding", "list", "load", "reset", "resume", "save", "status",
                                "task")]
)
_GROUPS = frozenset({"chat", "agent", "events", "db", "session"})
_SUBGROUPS = frozenset({("chat", "task"), ("chat", "event")})
_GLOBAL_VALUE = frozenset({"--db", "--project"})
_GLOBAL_FLAGS = frozenset({"--json", "--no-progress"})
# Options whose value "-" means "read standard input", per command.
STDIN_OPTIONS: dict[tuple[str, ...], frozenset[str]] = {
    ("chat", "post"): frozenset({"--body", "-b", "--body-file"}),
    ("chat", "event", "post"): frozenset({"--json-body", "--data", "-d"}),
    ("edit",): frozenset({"--old-file", "--new-file"}),
    ("agent", "diary"): frozenset({"--text"}),
}
# Commands whose positional argument "-" reads stdin; ``compress`` reads it with no argument
# at all, so its options taking a value are listed to tell a value from a positional.
STDIN_POSITIONAL = frozenset({("agent", "diary"), ("compress",)})
COMPRESS_VALUE_OPTIONS = frozenset({"--as", "--exit-code", "--session"})
COMPRESS_FLAGS = frozenset({"--json"})


def data_dir() -> str:
    """``leanctx.config.data_dir()`` without pathlib (a test keeps the two in step)."""
    home = os.environ.get("LEAN_CTX_HOME")
    if home:
        return os.path.expanduser(home)
    xdg = os.environ.get("XDG_DATA_HOME")
    base = os.path.expanduser(xdg) if xdg else os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "lean-ctx")


def daemon_dir() -> str:
    return os.path.join(data_dir(), "daemon")


def socket_path() -> str:
    return os.path.join(daemon_dir(), SOCKET_NAME)


# --- which calls go to the daemon ------------------------------------------------------------
def _command(argv: list[str]) -> tuple[tuple[str, ...], list[str]] | None:
    """(command path, its arguments) for a forwardable call, else None."""
    i, n = 0, len(argv)
    while i < n and argv[i].startswith("-"):
        a = argv[i]
        if a in _GLOBAL_VALUE:
            i += 2
        elif a in _GLOBAL_FLAGS or a.split("=", 1)[0] in _GLOBAL_VALUE:
            i += 1
        else:  # --help, --version, anything unknown
            return None
    if i >= n:
        return None
    path = [argv[i]]
    i += 1
    if path[0] in _GROUPS:
        if i >= n or argv[i].startswith("-"):
            return None
        path.append(argv[i])
        i += 1
        if tuple(path) in _SUBGROUPS:
            if i >= n or argv[i].startswith("-"):
                return None
            path.append(argv[i])
            i += 1
    cmd = tuple(path)
    return (cmd, argv[i:]) if cmd in FORWARD else None


def plan(argv: list[str]) -> bool | None:
    """None: run in-process. Otherwise forward, with stdin (True) or without it (False)."""
    found = _command(argv)
    if found is None:
        return None
    cmd, rest = found
    if "--help" in rest or "--" in rest:
        return None
    if cmd == ("events", "tail"):
        for a in rest:
            if a == "--follow" or (a.startswith("-") and not a.startswith("--") and "f" in a):
                return None
    opts = STDIN_OPTIONS.get(cmd, frozenset())
    positional = cmd in STDIN_POSITIONAL
    reads = False
    prev: str | None = None
    for a in rest:
        if a == "-":
            if prev in opts:
                reads = True
            elif prev is not None and prev.startswith("-") and prev != "-":
                if positional:
                    return None  # a value, or a positional after a flag: cannot tell
            elif positional:
                reads = True
        elif a.startswith("--") and "=" in a:
            name, value = a.split("=", 1)
            if value == "-" and name in opts:
                reads = True
        elif len(a) == 3 and a[0] == "-" and a[2] == "-" and a[:2] in opts:  # -b-
            reads = True
        prev = a
    if cmd == ("compress",) and not reads:
        skip = False
        has_source = False
        for a in rest:
            if skip:
                skip = False
            elif a in COMPRESS_VALUE_OPTIONS:
                skip = True
            elif a.startswith("-") and a != "-":
                if a not in COMPRESS_FLAGS and a.split("=", 1)[0] not in COMPRESS_VALUE_OPTIONS:
                    return None
            else:
                has_source = True
        reads = not has_source
    return reads


# --- the wire --------------------------------------------------------------------------------
def frame(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def recv_exact(sock: _sock.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("the daemon closed the connection")
        buf += chunk
    return bytes(buf)


def recv_frame(sock: _sock.socket) -> bytes:
    n = int.from_bytes(recv_exact(sock, 4), "big")
    if n >= MAX_FRAME:
        raise ConnectionError("frame too large")
    return recv_exact(sock, n) if n else b""


def connect(path: str | None = None, timeout: float = 2.0) -> _sock.socket | None:
    """A connection to the daemon's socket, or None if nothing listens there."""
    path = path or socket_path()
    s = _sock.socket(_sock.AF_UNIX, _sock.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        raw = os.fsencode(path)
        if len(raw) < 100:
            s.connect(raw)
        else:  # sun_path holds ~107 bytes: connect relative to the socket's directory
            here = os.open(".", os.O_RDONLY)
            try:
                os.chdir(os.path.dirname(path))
                s.connect(os.fsencode(os.path.basename(path)))
            finally:
                os.fchdir(here)
                os.close(here)
    except OSError:  # no socket, connection refused (stale socket), not a socket, timeout
        s.close()
        return None
    return s


def build_id() -> str:
    """This installation: the version and where the package lives (a daemon serves only callers
    of the same installation)."""
    pkg = sys.modules[__name__.split(".")[0]]
    return f"{getattr(pkg, '__version__', '?')}@{os.path.dirname(getattr(pkg, '__file__', '') or '')}"


def request_head(op: str, argv: list[str], ttys: tuple[bool, bool, bool] = (False, False, False),
                 term: str = "") -> bytes:
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = ""
    mask = os.umask(0o022)
    os.umask(mask)
    env = [k + b"=" + v for k, v in os.environb.items()]
    fields = [MAGIC, op.encode(), os.fsencode(build_id()), os.fsencode(cwd), str(os.getppid()).encode(),
              oct(mask).encode(), "".join("1" if t else "0" for t in ttys).encode(), term.encode(),
              str(len(env)).encode(), *env, *(os.fsencode(a) for a in argv)]
    return b"\0".join(fields)


def call(sock: _sock.socket, head: bytes, stdin: bytes = b"") -> tuple[str, int, bytes, bytes]:
    """Send one request; (status, exit code, stdout, stderr) of the answer."""
    sock.sendall(frame(head) + frame(stdin))
    return read_response(sock)


def read_response(sock: _sock.socket) -> tuple[str, int, bytes, bytes]:
    parts = recv_frame(sock).split(b"\0")
    if len(parts) != 3 or parts[0] != MAGIC:
        raise ConnectionError("not a lean-ctx daemon answer")
    out = recv_frame(sock)
    err = recv_frame(sock)
    return parts[1].decode(), int(parts[2]), out, err


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _read_stdin() -> bytes:
    chunks = []
    while True:
        try:
            b = os.read(0, 1 << 20)
        except OSError:
            break
        if not b:
            break
        chunks.append(b)
    return b"".join(chunks)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:  # pragma: no cover
            continue
        except OSError:  # a closed pipe or stream: the reader went away
            return
        view = view[n:]


def _restore_stdin(data: bytes) -> None:
    """After stdin was read for a call that falls back: give it back to the in-process CLI."""
    import io

    enc = getattr(sys.stdin, "encoding", None) or "utf-8"
    errors = getattr(sys.stdin, "errors", None) or "strict"
    sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding=enc, errors=errors)


def forward(argv: list[str]) -> int | None:
    """Run ``lean-ctx argv`` in the daemon; its exit code, or None to run it in-process."""
    if os.environ.get(NO_DAEMON_ENV, "") not in ("", "0") or not hasattr(_sock, "AF_UNIX"):
        return None
    reads = plan(argv)
    if reads is None:
        return None
    ttys = (_isatty(0), _isatty(1), _isatty(2))
    if reads and ttys[0]:
        return None  # the user would type the input: keep the terminal in this process
    sock = connect()
    if sock is None:
        return None
    try:
        term = ""
        if ttys[1]:
            try:
                size = os.get_terminal_size(1)
                term = f"{size.columns}x{size.lines}"
            except OSError:
                pass
        data = _read_stdin() if reads else b""
        try:
            sock.sendall(frame(request_head("run", argv, ttys, term)) + frame(data))
        except OSError:
            if reads:
                _restore_stdin(data)
            return None  # nothing was run
        timeout = os.environ.get(TIMEOUT_ENV)
        try:
            sock.settimeout(float(timeout) if timeout else None)
        except ValueError:
            sock.settimeout(None)
        try:
            status, code, out, err = read_response(sock)
        except KeyboardInterrupt:  # the daemon finishes the call; this process stops waiting
            return 130
        except (OSError, ValueError) as exc:
            _write(2, (f"error[DAEMON_LOST]: the lean-ctx daemon did not answer ({exc}); the command may or may "
                       "not have run. Check with `lean-ctx daemon status`, restart it with `lean-ctx daemon "
                       "stop` and `lean-ctx daemon start`, or set LEAN_CTX_NO_DAEMON=1.\n").encode())
            return 1
        if status != "ok":
            if reads:
                _restore_stdin(data)
            return None
        _write(1, out)
        _write(2, err)
        return code
    finally:
        sock.close()
