"""The daemon process: ``python -m leanctx.api.daemon.server --dir <data dir>/daemon``.

- Holds an exclusive ``flock`` on ``lean-ctx.lock`` for its whole life (a second daemon on the
  same directory refuses to start; ``control`` tells a stale socket from a live daemon by it).
- Serves ``lean-ctx.sock`` (mode 0600 in a 0700 directory; peers of another uid are refused):
  one thread per connection reads the request and waits; a single worker thread runs the calls,
  one at a time (``Runner``), so the process-global streams, cwd and environment are never shared.
- ``status`` answers from any thread, even while a long call runs; ``stop`` (or SIGTERM/SIGINT)
  removes the socket and pid file first (new clients then run in-process), lets calls already
  accepted finish, closes the databases and exits.
- A watcher thread checks every ``$LEAN_CTX_DAEMON_WATCH`` seconds (default 2; 0 turns it off)
  whether lean-ctx's source changed (an upgrade, an edit in a development tree). If it did, the
  daemon stops serving (callers run in-process meanwhile), drains and re-executes itself, so it
  never answers with stale code.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import select
import signal
import socket
import struct
import sys
import threading
import time
from collections import Counter
from typing import Any

from ..thin import LOCK_NAME, PID_NAME, SOCKET_NAME, frame
from .protocol import ProtocolError, Request, encode_response, parse_request, recv_frame
from .runner import Runner, code_stamp

READ_TIMEOUT = 10.0  # a peer that connects and sends nothing is dropped after this
WATCH_ENV = "LEAN_CTX_DAEMON_WATCH"


def _log(msg: str) -> None:
    sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} [{os.getpid()}] {msg}\n")
    sys.stderr.flush()


class _Job:
    __slots__ = ("done", "request", "result")

    def __init__(self, request: Request) -> None:
        self.request = request
        self.done = threading.Event()
        self.result: tuple[str, int, bytes, bytes] = ("fallback", 0, b"", b"")


class DaemonServer:
    def __init__(self, directory: str, *, warm: bool = True, watch_interval: float | None = None,
                 watch_root: str | None = None) -> None:
        from ... import __version__
        from ..thin import build_id

        self.build = build_id()
        self.dir = os.path.abspath(directory)
        self.sock_path = os.path.join(self.dir, SOCKET_NAME)
        self.pid_path = os.path.join(self.dir, PID_NAME)
        self.lock_path = os.path.join(self.dir, LOCK_NAME)
        self.version = __version__
        self.runner = Runner()
        self.warm = warm
        self.started = time.time()
        self.code_stamp = 0.0
        if watch_interval is None:
            try:
                watch_interval = float(os.environ.get(WATCH_ENV, "2"))
            except ValueError:
                watch_interval = 2.0
        self.watch_interval = watch_interval
        self.watch_root = watch_root
        self.restart_requested = False
        self.requests = 0
        self.fallbacks = 0
        self.errors = 0
        self.busy_seconds = 0.0
        self.last_request: float | None = None
        self.by_command: Counter[str] = Counter()
        self._stats_lock = threading.Lock()
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._stopping = threading.Event()
        self._handlers: set[threading.Thread] = set()
        self._handlers_lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        self._listener: socket.socket | None = None
        self._lock_fd: int | None = None
        self._sock_ino: int | None = None

    # --- life cycle ---------------------------------------------------------------------------
    def acquire(self) -> bool:
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        st = os.stat(self.dir)
        if st.st_uid != os.getuid():
            raise SystemExit(f"{self.dir} belongs to uid {st.st_uid}, not to this user; refusing to serve there")
        os.chmod(self.dir, 0o700)
        import fcntl

        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        for _ in range(20):  # a status probe may hold it for a moment
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._lock_fd = fd
                return True
            except BlockingIOError:
                time.sleep(0.01)
        os.close(fd)
        return False

    def bind(self) -> None:
        for stale in (self.sock_path,):
            try:
                os.unlink(stale)
            except FileNotFoundError:
                pass
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            if len(os.fsencode(self.sock_path)) < 100:
                s.bind(self.sock_path)
            else:
                here = os.open(".", os.O_RDONLY)
                try:
                    os.chdir(self.dir)
                    s.bind(SOCKET_NAME)
                finally:
                    os.fchdir(here)
                    os.close(here)
        finally:
            os.umask(old)
        os.chmod(self.sock_path, 0o600)
        self._sock_ino = os.stat(self.sock_path).st_ino
        tmp = f"{self.pid_path}.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"{os.getpid()}\n")
        os.replace(tmp, self.pid_path)
        s.listen(128)
        self._listener = s

    def serve_forever(self) -> int:
        if not self.acquire():
            _log(f"another daemon holds {self.lock_path}; not starting")
            return 3
        self.code_stamp = self._stamp()  # before importing: a change while warming up counts
        if self.warm:
            t0 = time.perf_counter()
            self.runner.warm()
            _log(f"warm in {time.perf_counter() - t0:.2f}s")
        self.bind()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, lambda *_: self.shutdown())
        worker = threading.Thread(target=self._work, name="lean-ctx-worker", daemon=True)
        worker.start()
        if self.watch_interval > 0:
            threading.Thread(target=self._watch, name="lean-ctx-watch", daemon=True).start()
        _log(f"serving {self.sock_path} (lean-ctx {self.version}, Python {sys.version.split()[0]})")
        listener = self._listener
        assert listener is not None
        try:
            while not self._stopping.is_set():
                try:
                    ready, _, _ = select.select([listener.fileno(), self._wake_r], [], [])
                except InterruptedError:  # pragma: no cover
                    continue
                if self._wake_r in ready or self._stopping.is_set():  # woken by shutdown()
                    break
                try:
                    conn, _ = listener.accept()
                except OSError:
                    continue
                t = threading.Thread(target=self._handle, args=(conn,), daemon=True)
                with self._handlers_lock:
                    self._handlers.add(t)
                t.start()
        finally:
            self._finish(worker)
        return 0

    def _stamp(self) -> float:
        from pathlib import Path

        return code_stamp(Path(self.watch_root) if self.watch_root else None)

    def _watch(self) -> None:
        while not self._stopping.wait(self.watch_interval):
            if self._stamp() > self.code_stamp:
                _log("lean-ctx's code changed: restarting")
                self.restart_requested = True
                self.shutdown()
                return

    def shutdown(self) -> None:
        if not self._stopping.is_set():
            self._stopping.set()
            try:
                os.write(self._wake_w, b"x")
            except OSError:  # pragma: no cover
                pass

    def _unlink_ours(self) -> None:
        try:
            if self._sock_ino is not None and os.stat(self.sock_path).st_ino == self._sock_ino:
                os.unlink(self.sock_path)
        except FileNotFoundError:
            pass
        try:
            with open(self.pid_path) as f:
                if f.read().strip() == str(os.getpid()):
                    os.unlink(self.pid_path)
        except FileNotFoundError:
            pass

    def _finish(self, worker: threading.Thread) -> None:
        self._unlink_ours()  # from here on clients find no socket and run in-process
        if self._listener is not None:
            self._listener.close()
        deadline = time.monotonic() + 60
        while True:
            with self._handlers_lock:
                alive = [t for t in self._handlers if t.is_alive()]
            if not alive or time.monotonic() > deadline:
                break
            alive[0].join(0.1)
        self._jobs.put(None)
        worker.join(30)
        self.runner.pool.close_all()
        _log(f"stopped after {self.requests} calls")
        if self._lock_fd is not None:
            os.close(self._lock_fd)

    # --- connections --------------------------------------------------------------------------
    def _peer_ok(self, conn: socket.socket) -> bool:
        so_peercred = getattr(socket, "SO_PEERCRED", None)
        if so_peercred is None:  # pragma: no cover - not Linux: the 0700 directory guards it
            return True
        try:
            _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, so_peercred, 12))
        except OSError:  # pragma: no cover
            return False
        return uid == os.getuid()

    def _handle(self, conn: socket.socket) -> None:
        try:
            with conn:
                if not self._peer_ok(conn):
                    return
                conn.settimeout(READ_TIMEOUT)
                try:
                    head = recv_frame(conn)  # type: ignore[arg-type]
                    stdin = recv_frame(conn)  # type: ignore[arg-type]
                    req = parse_request(head, stdin)
                except (OSError, ConnectionError, ProtocolError) as exc:
                    _log(f"bad request: {exc}")
                    return
                conn.settimeout(None)
                conn.sendall(self._answer(req))
        except OSError:  # the client went away (Ctrl-C): nothing to tell it
            pass
        except Exception as exc:  # pragma: no cover - keep serving
            _log(f"handler failed: {exc!r}")
        finally:
            with self._handlers_lock:
                self._handlers.discard(threading.current_thread())

    def _answer(self, req: Request) -> bytes:
        if req.op == "status":
            return encode_response("ok", 0, json.dumps(self.status()).encode())
        if req.op == "stop":
            self.shutdown()
            return encode_response("ok", 0, b"stopping\n")
        if self._stopping.is_set() or req.version != self.build:  # callers run it in-process
            with self._stats_lock:
                self.fallbacks += 1
            return encode_response("fallback", 0)
        job = _Job(req)
        self._jobs.put(job)
        job.done.wait()
        status, code, out, err = job.result
        return encode_response(status, code, out, err)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            t0 = time.perf_counter()
            try:
                job.result = self.runner.run(job.request)
            except Exception as exc:  # pragma: no cover - the runner catches what the CLI raises
                _log(f"call failed outside the CLI: {exc!r}")
                with self._stats_lock:
                    self.errors += 1
                job.result = ("fallback", 0, b"", b"")
            finally:
                dt = time.perf_counter() - t0
                with self._stats_lock:
                    if job.result[0] == "ok":
                        self.requests += 1
                        self.by_command[_command_name(job.request.argv)] += 1
                    else:
                        self.fallbacks += 1
                    self.busy_seconds += dt
                    self.last_request = time.time()
                job.done.set()

    # --- status -------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        tokens = sys.modules.get("leanctx.context.tokens")
        with self._stats_lock:
            return {
                "running": True,
                "pid": os.getpid(),
                "version": self.version,
                "build": self.build,
                "python": sys.executable,
                "socket": self.sock_path,
                "started_at": self.started,
                "uptime_seconds": round(time.time() - self.started, 3),
                "code_stamp": self.code_stamp,
                "requests": self.requests,
                "fallbacks": self.fallbacks,
                "errors": self.errors,
                "busy_seconds": round(self.busy_seconds, 4),
                "last_request_at": self.last_request,
                "queued": self._jobs.qsize(),
                "by_command": dict(self.by_command),
                "databases": self.runner.pool.paths(),
                "tokenizers": sorted(getattr(tokens, "_cache", {}) or {}) if tokens else [],
                "stopping": self._stopping.is_set(),
                "restarting": self.restart_requested,
            }


def _command_name(argv: list[str]) -> str:
    from ..thin import _command

    found = _command(argv)
    return " ".join(found[0]) if found else "other"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m leanctx.api.daemon.server", description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="The daemon directory: <data dir>/daemon.")
    ap.add_argument("--no-warm", action="store_true", help="Do not import the CLI before serving.")
    args = ap.parse_args(argv)
    server = DaemonServer(args.dir, warm=not args.no_warm)
    code = server.serve_forever()
    if server.restart_requested:
        sys.stderr.flush()
        cmd = [sys.executable, "-m", "leanctx.api.daemon.server", *(argv if argv is not None else sys.argv[1:])]
        os.execv(sys.executable, cmd)
    return code


__all__ = ["DaemonServer", "frame", "main"]

if __name__ == "__main__":
    sys.exit(main())
