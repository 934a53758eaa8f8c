"""Start, stop and inspect the daemon from the CLI (``lean-ctx daemon start|stop|status``).

A daemon is *running* when its socket answers a ``status`` request. It is *unresponsive* when
its process still holds the lock but the socket does not answer (starting up, or hung). Files
left by a daemon that died (socket, pid file) without a process holding the lock are *stale*:
clients already ignore them (connection refused) and ``start`` removes them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from ...errors import LeanCtxError
from .. import thin


class DaemonError(LeanCtxError):
    code = "DAEMON_ERROR"
    exit_code = 1


@dataclass(frozen=True)
class DaemonPaths:
    dir: str
    socket: str
    pid: str
    lock: str
    log: str

    @classmethod
    def current(cls) -> DaemonPaths:
        d = thin.daemon_dir()
        return cls(d, os.path.join(d, thin.SOCKET_NAME), os.path.join(d, thin.PID_NAME),
                   os.path.join(d, thin.LOCK_NAME), os.path.join(d, "daemon.log"))


def request(op: str, paths: DaemonPaths | None = None, timeout: float = 5.0) -> dict[str, Any] | None:
    """Send ``status`` or ``stop``; the answer (status: the daemon's figures), or None."""
    paths = paths or DaemonPaths.current()
    sock = thin.connect(paths.socket, timeout=timeout)
    if sock is None:
        return None
    try:
        status, _code, out, _err = thin.call(sock, thin.request_head(op, []))
    except (OSError, ValueError):
        return None
    finally:
        sock.close()
    if status != "ok":
        return None
    if op == "status":
        try:
            return json.loads(out)
        except ValueError:
            return None
    return {"answer": out.decode(errors="replace").strip()}


def _lock_held(paths: DaemonPaths) -> bool:
    """Whether a daemon process holds the directory's lock (alive, answering or not)."""
    import fcntl

    try:
        fd = os.open(paths.lock, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock we took
    return False


def _pid_from_file(paths: DaemonPaths) -> int | None:
    try:
        with open(paths.pid) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def probe(paths: DaemonPaths | None = None) -> dict[str, Any]:
    """What is there: running (with the daemon's figures), unresponsive, stale or nothing."""
    paths = paths or DaemonPaths.current()
    st = request("status", paths)
    if st is not None:
        return {**st, "state": "running", "stale": False}
    leftovers = [p for p in (paths.socket, paths.pid) if os.path.lexists(p)]
    if _lock_held(paths):
        return {"running": False, "state": "unresponsive", "stale": False, "pid": _pid_from_file(paths),
                "socket": paths.socket}
    return {"running": False, "state": "stale" if leftovers else "stopped", "stale": bool(leftovers),
            "leftovers": leftovers, "socket": paths.socket}


def clean_stale(paths: DaemonPaths) -> list[str]:
    removed = []
    for p in (paths.socket, paths.pid):
        try:
            os.unlink(p)
            removed.append(p)
        except FileNotFoundError:
            pass
    return removed


def _log_tail(paths: DaemonPaths, n: int = 8) -> str:
    try:
        with open(paths.log, errors="replace") as f:
            return "".join(f.readlines()[-n:]).strip()
    except OSError:
        return ""


def start(*, wait: float = 20.0, foreground: bool = False) -> dict[str, Any]:
    """Start the daemon for the current data dir (idempotent); its status."""
    import fcntl

    paths = DaemonPaths.current()
    os.makedirs(paths.dir, mode=0o700, exist_ok=True)
    os.chmod(paths.dir, 0o700)
    gate = os.open(os.path.join(paths.dir, "start.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(gate, fcntl.LOCK_EX)  # one start at a time
        found = probe(paths)
        if found["state"] == "running":
            return {**found, "started": False}
        if found["state"] == "unresponsive":
            st = _wait_ready(paths, None, min(wait, 5.0))
            if st is not None:
                return {**st, "started": False}
            raise DaemonError(
                "DAEMON_UNRESPONSIVE",
                f"a daemon (pid {found.get('pid')}) holds {paths.lock} but does not answer; stop it with "
                f"`lean-ctx daemon stop` (or kill {found.get('pid')}), then start again",
            )
        removed = clean_stale(paths)
        if foreground:
            fcntl.flock(gate, fcntl.LOCK_UN)
            from .server import DaemonServer

            code = DaemonServer(paths.dir).serve_forever()
            return {"running": False, "state": "stopped", "exit_code": code}
        log = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        if os.fstat(log).st_size > 1 << 20:  # keep the log small
            os.ftruncate(log, 0)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "leanctx.api.daemon.server", "--dir", paths.dir],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=paths.dir,
                start_new_session=True, close_fds=True,
            )
        finally:
            os.close(log)
        st = _wait_ready(paths, proc, wait)
        if st is None:
            if proc.poll() is None:
                proc.terminate()
            tail = _log_tail(paths)
            raise DaemonError(
                "DAEMON_START_FAILED",
                f"the daemon did not come up within {wait:g}s; see {paths.log}" + (f":\n{tail}" if tail else ""),
            )
        return {**st, "started": True, "state": "running", "stale": False, "cleaned": removed}
    finally:
        os.close(gate)


def _wait_ready(paths: DaemonPaths, proc: subprocess.Popen[bytes] | None, wait: float) -> dict[str, Any] | None:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        st = request("status", paths, timeout=1.0)
        if st is not None:
            return st
        if proc is not None and proc.poll() is not None:
            # it lost the lock to a daemon that was restarting itself: that one will answer
            return _wait_ready(paths, None, min(2.0, deadline - time.monotonic())) if _lock_held(paths) else None
        time.sleep(0.02)
    return None


def stop(*, wait: float = 15.0) -> dict[str, Any]:
    """Stop the daemon (idempotent): ask it, SIGTERM it after half of ``wait``, SIGKILL it
    after ``wait``; then remove what it left."""
    paths = DaemonPaths.current()
    found = probe(paths)
    if found["state"] in ("stopped", "stale"):
        return {"stopped": False, "was": found["state"], "cleaned": clean_stale(paths)}
    pid = found.get("pid") or _pid_from_file(paths)

    def kill(sig: int) -> None:
        if pid is not None:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    termed = False
    if found["state"] == "running" and request("stop", paths) is not None:
        pass
    else:
        kill(signal.SIGTERM)
        termed = True
    start_t = time.monotonic()
    while _lock_held(paths):
        waited = time.monotonic() - start_t
        if waited > wait:
            kill(signal.SIGKILL)
            time.sleep(0.2)
            break
        if not termed and waited > wait / 2:
            kill(signal.SIGTERM)
            termed = True
        time.sleep(0.02)
    if _lock_held(paths):
        raise DaemonError("DAEMON_STOP_FAILED", f"the daemon (pid {pid}) does not stop; kill it by hand")
    return {"stopped": True, "was": found["state"], "pid": pid, "requests": found.get("requests"),
            "cleaned": clean_stale(paths)}


__all__ = ["DaemonError", "DaemonPaths", "clean_stale", "probe", "request", "start", "stop"]
