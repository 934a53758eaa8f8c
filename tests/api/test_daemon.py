"""The daemon end to end: the real console script, a real daemon process, real sockets."""

from __future__ import annotations

import json
import re
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds


class Env:
    """A data dir of its own (the daemon's socket lives there) and a database per test."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.base = {k: v for k, v in os.environ.items()
                     if k not in ("LEAN_CTX_AGENT_ID", "LEAN_CTX_NO_DAEMON", "LEAN_CTX_DB", "LEAN_CTX_SESSION_ID")}
        self.base["LEAN_CTX_HOME"] = str(home)
        # other work may edit lean-ctx's source while these tests run: no restarts mid-test
        self.base["LEAN_CTX_DAEMON_WATCH"] = "0"

    def run(self, *args: str, db: Path | None = None, env: dict[str, str] | None = None, input: str | None = None,
            cwd: Path | None = None, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        full = dict(self.base)
        if db is not None:
            full["LEAN_CTX_DB"] = str(db)
        full.update(env or {})
        p = subprocess.run([LEAN_CTX, *args], env=full, input=input, cwd=cwd, capture_output=True, text=True,
                           timeout=timeout, stdin=None if input is not None else subprocess.DEVNULL)
        if check and p.returncode != 0:
            raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
        return p

    def status(self) -> dict:
        p = self.run("daemon", "status", "--json", check=False)
        return json.loads(p.stdout)

    def served(self) -> int:
        return self.status()["requests"]


def _wait_dead(pid: int, timeout: float = 10.0) -> None:
    """Until ``pid`` is gone or a zombie (its files and locks are released either way)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return
        except FileNotFoundError:
            return
        time.sleep(0.01)
    raise AssertionError(f"pid {pid} still runs")


def _wait_refused(sock: Path, timeout: float = 10.0) -> None:
    """Until nothing listens on ``sock`` any more. A killed multi-threaded process shows as a
    zombie as soon as its first thread is gone; its files (the listening socket) close with the
    last one, and a connection made in between is accepted into the backlog, then reset."""
    import socket

    deadline = time.monotonic() + timeout
    here = os.getcwd()
    try:
        os.chdir(sock.parent)  # the path may be longer than a socket address holds
        while time.monotonic() < deadline:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                try:
                    s.connect(sock.name)
                except ConnectionRefusedError:
                    return
            time.sleep(0.01)
    finally:
        os.chdir(here)
    raise AssertionError(f"{sock} still accepts connections")


def _stop(env: Env) -> None:
    env.run("daemon", "stop", check=False, timeout=30)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    env = Env(tmp_path_factory.mktemp("dh") / "home")
    try:
        p = env.run("daemon", "start", "--json")
        assert json.loads(p.stdout)["started"] is True
        yield env
    finally:
        _stop(env)


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return tmp_path / "events.db"


def test_start_status_files_and_modes(daemon: Env) -> None:
    st = daemon.status()
    assert st["state"] == "running" and st["running"] is True
    os.kill(st["pid"], 0)  # alive
    d = daemon.home / "daemon"
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    assert stat.S_ISSOCK((d / "lean-ctx.sock").stat().st_mode)
    assert stat.S_IMODE((d / "lean-ctx.sock").stat().st_mode) == 0o600
    assert stat.S_IMODE((d / "lean-ctx.pid").stat().st_mode) == 0o600
    assert int((d / "lean-ctx.pid").read_text()) == st["pid"]
    again = json.loads(daemon.run("daemon", "start", "--json").stdout)
    assert again["started"] is False and again["pid"] == st["pid"]  # idempotent
    human = daemon.run("daemon", "status").stdout
    assert f"pid {st['pid']}" in human


def test_chat_post_and_read_are_served_by_the_daemon(daemon: Env, db: Path) -> None:
    a, b = {"LEAN_CTX_AGENT_ID": "a"}, {"LEAN_CTX_AGENT_ID": "b"}
    before = daemon.status()
    daemon.run("chat", "init", "dev", "--members", "a,b", db=db, env=a)
    p = daemon.run("chat", "post", "--channel", "dev", "--to", "all", "--title", "hi", "--body", "hello", db=db, env=a)
    assert p.stdout.startswith("posted #1")
    r = daemon.run("chat", "read", "--channel", "dev", "--json", db=db, env=b)
    msgs = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    assert "hello" in r.stdout and "hi" in r.stdout, msgs
    after = daemon.status()
    assert after["requests"] == before["requests"] + 3
    assert after["by_command"]["chat post"] >= 1 and after["by_command"]["chat read"] >= 1
    assert str(db) in after["databases"]  # kept open between calls
    # the same log, read in-process, agrees
    again = daemon.run("chat", "peek", "--channel", "dev", "--json", db=db, env={**b, "LEAN_CTX_NO_DAEMON": "1"})
    assert "hello" in again.stdout
    assert daemon.served() == after["requests"]  # that one did not go through the daemon


def test_exit_codes_and_errors_are_preserved(daemon: Env, db: Path) -> None:
    a, b = {"LEAN_CTX_AGENT_ID": "a"}, {"LEAN_CTX_AGENT_ID": "b"}
    daemon.run("chat", "task", "create", "--channel", "general", "--id", "t1", "--title", "x", db=db, env=a)
    daemon.run("chat", "task", "claim", "t1", "--channel", "general", db=db, env=a)
    n = daemon.served()
    refused = daemon.run("chat", "task", "claim", "t1", "--channel", "general", db=db, env=b, check=False)
    assert daemon.served() == n + 1
    local = daemon.run("chat", "task", "claim", "t1", "--channel", "general", db=db,
                       env={**b, "LEAN_CTX_NO_DAEMON": "1"}, check=False)
    assert refused.returncode == local.returncode == 2
    def timeless(text: str) -> str:  # the lease's countdown may tick between the two calls
        return re.sub(r"\b\d+s left\b", "Ns left", text)

    assert refused.stderr.startswith("error[") and refused.stdout == local.stdout
    assert timeless(refused.stderr) == timeless(local.stderr)
    as_json = daemon.run("--json", "chat", "task", "claim", "t1", "--channel", "general", db=db, env=b, check=False)
    assert as_json.returncode == 2 and "code" in json.loads(as_json.stdout)["error"]
    usage = daemon.run("chat", "post", "--channel", "general", db=db, env=a, check=False)  # no --title
    assert usage.returncode == 2 and "Traceback" not in usage.stderr and "--title" in usage.stderr


def test_stdin_is_forwarded(daemon: Env, db: Path) -> None:
    a = {"LEAN_CTX_AGENT_ID": "a"}
    n = daemon.served()
    daemon.run("chat", "post", "--to", "all", "--title", "piped", "--body", "-", db=db, env=a,
               input="line one\nline two ✓\n")
    daemon.run("chat", "post", "--to", "all", "--title", "piped2", "--body=-", db=db, env=a, input="second\n")
    out = daemon.run("chat", "peek", "--json", db=db, env=a).stdout
    assert "line one\\nline two ✓" in out and "second" in out
    comp = daemon.run("compress", "--as", "git status", db=db, env=a, input="On branch main\nnothing to commit\n")
    assert comp.returncode == 0 and comp.stdout.strip()
    assert daemon.served() == n + 4


def test_identity_is_the_callers(daemon: Env, db: Path, tmp_path: Path) -> None:
    n = daemon.served()
    reg = json.loads(daemon.run("agent", "register", "--type", "claude", "--project-root", str(tmp_path), "--json",
                                db=db).stdout)
    assert reg["agent_id"] == f"local-{os.getpid()}"  # the caller's parent is this test, not the daemon's
    listed = json.loads(daemon.run("--project", str(tmp_path), "agent", "list", "--json", db=db).stdout)
    assert [(x["agent_id"], x["pid"]) for x in listed] == [(f"local-{os.getpid()}", os.getpid())]
    daemon.run("chat", "post", "--to", "all", "--title", "who", "--body", "me", db=db)
    daemon.run("chat", "post", "--to", "all", "--title", "named", "--body", "x", db=db, env={"LEAN_CTX_AGENT_ID": "w2"})
    senders = [e["actor"] for e in map(json.loads, daemon.run("events", "tail", "--since", "0", "--kind",
                                                               "message.posted", "--json", db=db).stdout.splitlines())]
    assert senders == [f"local-{os.getpid()}", "w2"]
    assert daemon.served() == n + 5


def test_output_matches_in_process(daemon: Env, db: Path, tmp_path: Path) -> None:
    a = {"LEAN_CTX_AGENT_ID": "a"}
    daemon.run("chat", "post", "--to", "all", "--title", "t", "--body", "b", db=db, env=a)
    daemon.run("chat", "task", "create", "--id", "k", "--title", "task k", db=db, env=a)
    local = {**a, "LEAN_CTX_NO_DAEMON": "1"}
    for args in (("events", "tail", "--since", "0", "--json"), ("chat", "task", "list"), ("events", "lineage", "2"),
                 ("chat", "task", "show", "k"), ("events", "search", "task"), ("db", "info", "--json")):
        via, here = daemon.run(*args, db=db, env=a, check=False), daemon.run(*args, db=db, env=local, check=False)
        assert (via.returncode, via.stdout, via.stderr) == (here.returncode, here.stdout, here.stderr), args
    # the default database follows the caller's working directory (one per project)
    p1, p2 = tmp_path / "p1", tmp_path / "p2"
    p1.mkdir(), p2.mkdir()
    paths = [json.loads(daemon.run("db", "info", "--json", cwd=p, env=e).stdout)["path"]
             for p in (p1, p2) for e in (a, local)]
    assert paths[0] == paths[1] and paths[2] == paths[3] and paths[0] != paths[2]


def test_long_running_and_unlisted_verbs_run_in_process(daemon: Env, db: Path) -> None:
    a = {"LEAN_CTX_AGENT_ID": "a"}
    n = daemon.served()
    w = daemon.run("chat", "wait", "--timeout", "0.2", db=db, env=a, check=False)
    assert w.returncode == 2 and "CHAT_WAIT_TIMEOUT" in w.stderr
    daemon.run("events", "tail", "--follow", "--timeout", "0.2", db=db, env=a)
    daemon.run("chat", "post", "--help", db=db, env=a)
    daemon.run("--version", env=a)
    assert daemon.served() == n


def test_deleted_database_is_reopened_not_written_to_the_unlinked_file(daemon: Env, db: Path) -> None:
    a = {"LEAN_CTX_AGENT_ID": "a"}
    daemon.run("chat", "post", "--to", "all", "--title", "one", "--body", "1", db=db, env=a)
    for p in db.parent.glob(db.name + "*"):
        p.unlink()
    daemon.run("chat", "post", "--to", "all", "--title", "two", "--body", "2", db=db, env=a)
    out = daemon.run("chat", "peek", "--json", db=db, env={**a, "LEAN_CTX_NO_DAEMON": "1"}).stdout
    assert "two" in out and "one" not in out


def test_protocol_declines_another_version(daemon: Env) -> None:
    from leanctx.api import thin

    sock = thin.connect(str(daemon.home / "daemon" / "lean-ctx.sock"))
    assert sock is not None
    head = thin.request_head("run", ["chat", "peek"]).split(b"\0")
    head[2] = b"0.0.0-other@/elsewhere"
    try:
        status, _code, out, err = thin.call(sock, b"\0".join(head))
    finally:
        sock.close()
    assert (status, out, err) == ("fallback", b"", b"")


def test_thin_client_imports_only_the_standard_library_when_forwarding(daemon: Env, db: Path) -> None:
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "from leanctx.api.cli import main\n"
        "sys.argv = ['lean-ctx', 'chat', 'peek']\n"
        "from leanctx.api import thin\n"
        "rc = thin.forward(sys.argv[1:])\n"
        "names = {m.split('.')[0] for m in set(sys.modules) - before} - set(sys.stdlib_module_names) - {'leanctx'}\n"
        "extra = {m for m in sys.modules if m.startswith('leanctx') and m not in "
        "('leanctx', 'leanctx.api', 'leanctx.api.cli', 'leanctx.api.thin')}\n"
        "print(rc, sorted(names | extra), file=sys.stderr)\n"
    )
    env = {**daemon.base, "LEAN_CTX_DB": str(db), "LEAN_CTX_AGENT_ID": "a"}
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("0 ") and last.endswith("[]"), p.stderr


def test_stale_socket_falls_back_and_start_cleans_it(tmp_path: Path, db: Path) -> None:
    env = Env(tmp_path / "h")
    try:
        pid = json.loads(env.run("daemon", "start", "--json").stdout)["pid"]
        os.kill(pid, signal.SIGKILL)
        _wait_dead(pid)
        sock = tmp_path / "h" / "daemon" / "lean-ctx.sock"
        assert sock.exists()  # SIGKILL left the socket behind
        _wait_refused(sock)
        p = env.run("chat", "post", "--to", "all", "--title", "x", "--body", "y", db=db,
                    env={"LEAN_CTX_AGENT_ID": "a"})
        assert p.stdout.startswith("posted #1")  # in-process
        st = env.run("daemon", "status", "--json", check=False)
        assert st.returncode == 3 and json.loads(st.stdout)["state"] == "stale"
        started = json.loads(env.run("daemon", "start", "--json").stdout)
        assert started["started"] is True and str(sock) in started["cleaned"]
        assert env.run("chat", "peek", db=db, env={"LEAN_CTX_AGENT_ID": "a"}).returncode == 0
        assert env.served() == 1
    finally:
        _stop(env)
    st = env.run("daemon", "status", "--json", check=False)
    assert st.returncode == 3 and json.loads(st.stdout)["state"] == "stopped"
    assert not (tmp_path / "h" / "daemon" / "lean-ctx.sock").exists()
    again = json.loads(env.run("daemon", "stop", "--json").stdout)
    assert again["stopped"] is False  # idempotent


def test_stop_lets_clients_fall_back_and_long_socket_paths_work(tmp_path: Path, db: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 40)
    env = Env(deep)
    assert len(str(deep / "daemon" / "lean-ctx.sock")) > 108
    try:
        env.run("daemon", "start")
        env.run("chat", "post", "--to", "all", "--title", "x", "--body", "y", db=db, env={"LEAN_CTX_AGENT_ID": "a"})
        assert env.served() == 1
        out = json.loads(env.run("daemon", "stop", "--json").stdout)
        assert out["stopped"] is True and out["requests"] == 1
    finally:
        _stop(env)
    p = env.run("chat", "peek", db=db, env={"LEAN_CTX_AGENT_ID": "a"})
    assert "x" in p.stdout


def test_a_code_change_makes_the_daemon_stop_serving_and_restart(tmp_path: Path) -> None:
    """In-process (the real restart re-executes the process): the watcher notices a newer
    source file, new calls are declined (callers run in-process), the server drains and asks
    for a restart."""
    import threading

    from leanctx.api import thin
    from leanctx.api.daemon.server import DaemonServer

    src = tmp_path / "src"
    src.mkdir()
    (src / "a.py").write_text("x = 1\n")
    old = time.time() - 100
    os.utime(src / "a.py", (old, old))
    server = DaemonServer(str(tmp_path / "d"), warm=False, watch_interval=0.05, watch_root=str(src))
    done: list[int] = []
    t = threading.Thread(target=lambda: done.append(server.serve_forever()), daemon=True)
    t.start()
    sock_path = str(tmp_path / "d" / "lean-ctx.sock")
    for _ in range(500):
        if os.path.exists(sock_path):
            break
        time.sleep(0.01)
    s = thin.connect(sock_path)
    assert s is not None
    try:
        status = json.loads(thin.call(s, thin.request_head("status", []))[2])
    finally:
        s.close()
    assert status["running"] and not status["restarting"]
    (src / "b.py").write_text("y = 2\n")
    t.join(10)
    assert done == [0] and server.restart_requested
    assert not os.path.exists(sock_path) and not os.path.exists(tmp_path / "d" / "lean-ctx.pid")
