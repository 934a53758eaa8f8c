"""A log that cannot be written can still be read.

The store opens read-only when asked (``read_only=True``, ``$LEAN_CTX_READ_ONLY=1``) or when the
file or its directory is not writable: readers use SQLite's ``mode=ro`` (which sees the
``-wal``), or ``immutable=1`` when the ``-shm`` cannot be created and no ``-wal`` holds changes.
Projections that are behind catch up in TEMP copies that vanish with the connection; appending
is ``STORE_READ_ONLY`` (exit 1). The database file is never changed.

Root ignores file permissions, so two kinds of tests:

- everything the read-only mode does, as any user, through the explicit switch (the same code
  path as a permission-forced one: only the reason in the messages differs);
- the permission-forced entry and the ``immutable`` fallback, on a chmod-ed directory, by a
  real unprivileged process (``setpriv`` to ``nobody`` when the tests run as root; skipped
  only when that is impossible).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from leanctx.app import LeanCtx
from leanctx.commands.chat import PostMessage
from leanctx.errors import StoreError
from leanctx.events import NewEvent, SqliteEventStore
from leanctx.events.kinds import AgentDeregistered, AgentHeartbeat

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def note(text: str) -> NewEvent:
    return NewEvent(event=AgentDeregistered(agent_id="n", reason=text))


def cli(db: Path, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
        prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    full.update({"LEAN_CTX_HOME": os.environ["LEAN_CTX_HOME"], "LEAN_CTX_DB": str(db), "LEAN_CTX_AGENT_ID": "alice",
                 **(env or {})})
    p = subprocess.run([*(prefix or []), LEAN_CTX, *args], capture_output=True, text=True, env=full, timeout=120,
                       cwd=cwd, check=False)
    assert "Traceback" not in p.stderr and "INTERNAL_ERROR" not in p.stdout + p.stderr, p.stdout + p.stderr
    return p


def ok_json(p: subprocess.CompletedProcess[str]) -> Any:
    assert p.returncode == 0, (p.args, p.stdout, p.stderr)
    return [json.loads(line) for line in p.stdout.splitlines()]


def refused(p: subprocess.CompletedProcess[str], code: str = "STORE_READ_ONLY") -> dict[str, Any]:
    assert p.returncode == 1, (p.args, p.stdout, p.stderr)
    err = json.loads(p.stdout.strip().splitlines()[-1])["error"]
    assert err["code"] == code, err
    return err


# --- the store --------------------------------------------------------------------------------

@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "events.db"
    with SqliteEventStore(path) as s:
        s.append("s", [note("first walrus"), NewEvent(event=AgentHeartbeat(agent_id="a"))])
        s.index_fts()
        s.append("s", [note("second walrus")])  # not in the FTS index yet
    return path


def test_a_read_only_store_reads_and_refuses_writes(log: Path) -> None:
    before = sha(log)
    with SqliteEventStore(log, read_only=True) as s:
        assert s.read_only
        assert s.head().position == 3 and [e.position for e in s.read_all(0)] == [1, 2, 3]
        assert s.get(2) is not None and s.lineage(1).event.position == 1
        assert s.verify().ok and s.fts_position() == 2
        assert s.wait(0, timeout=0) and s.wait(3, timeout=0.05) == []
        with pytest.raises(StoreError) as exc:
            s.append("s", [note("x")])
        assert exc.value.code == "STORE_READ_ONLY" and exc.value.exit_code == 1
        assert "read-only" in exc.value.message and str(log) in exc.value.message
        with pytest.raises(StoreError) as exc, s.transaction() as tx:
            tx.append("s", [note("y")])
        assert exc.value.code == "STORE_READ_ONLY"
        # the FTS index is behind: searching would have to write it
        with pytest.raises(StoreError) as exc:
            s.search("walrus")
        assert exc.value.code == "STORE_READ_ONLY" and "full-text index" in exc.value.message
    assert sha(log) == before
    with SqliteEventStore(log) as s:  # still a good log, nothing appended
        assert s.head().position == 3 and s.verify().ok
        assert sorted(h.event.position for h in s.search("walrus")) == [1, 3]
    with SqliteEventStore(log, read_only=True) as s:  # index current: search works read-only
        assert len(s.search("walrus")) == 2


def test_the_switch_is_the_environment(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for value, expected in (("1", True), ("true", True), ("0", False), ("", False), ("no", False)):
        monkeypatch.setenv("LEAN_CTX_READ_ONLY", value)
        with SqliteEventStore(log) as s:
            assert s.read_only is expected, value
    monkeypatch.setenv("LEAN_CTX_READ_ONLY", "1")
    with SqliteEventStore(log, read_only=False) as s:  # an explicit argument wins
        assert not s.read_only


def test_a_missing_log_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "events.db"
    with pytest.raises(StoreError) as exc:
        SqliteEventStore(path, read_only=True)
    assert exc.value.code == "STORE_NOT_FOUND" and exc.value.exit_code == 1
    assert not (tmp_path / "nowhere").exists()


def test_projections_catch_up_in_scratch_copies(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    (tmp_path / "a.py").write_text("def f(x):\n    return x\n" * 40)
    assert cli(db, "read", str(tmp_path / "a.py"), "--mode", "signatures", cwd=tmp_path).returncode == 0
    assert cli(db, "chat", "post", "-t", "hello", "-b", "world").returncode == 0
    copy = tmp_path / "copy.db"
    shutil.copy(db, copy)
    before = sha(db)
    with LeanCtx(db, read_only=True) as lc:
        stored = {c["name"]: c["position"] for c in lc.projections.checkpoints()}
        assert stored["savings"] == 0 < lc.store.head().position  # eventual: behind
        digest = lc.projections.digest("savings")  # caught up, in TEMP copies
        assert {c["name"]: c["position"] for c in lc.projections.checkpoints()}["savings"] == lc.store.head().position
        head = lc.store.head().position
        with pytest.raises(StoreError) as exc:
            lc.bus.dispatch(PostMessage(channel="general", to="all", title="t", body="b"), actor="alice")
        assert exc.value.code == "STORE_READ_ONLY"
        assert lc.store.head().position == head
    assert sha(db) == before
    raw = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    assert raw.execute("SELECT position FROM projection_checkpoints WHERE name = 'savings'").fetchone()[0] == 0
    raw.close()
    with LeanCtx(copy) as lc:  # the same fold, written for real
        assert lc.projections.digest("savings") == digest


def test_scratch_copies_keep_constraints_and_roll_back(log: Path) -> None:
    raw = apsw.Connection(str(log))
    raw.execute("CREATE TABLE kv (k TEXT NOT NULL, v TEXT)")
    raw.execute('CREATE UNIQUE INDEX "kv ""key""" ON kv (k)')  # an upsert's target: must be copied
    raw.execute("INSERT INTO kv VALUES ('a', 'file')")
    raw.close()
    before = sha(log)
    upsert = "INSERT INTO kv VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v"
    with SqliteEventStore(log, read_only=True) as s:
        with s.transaction() as tx:
            tx.conn.execute(upsert, ("a", "scratch"))
            tx.conn.execute(upsert, ("b", "new"))
        conn = s.read_connection()
        assert conn.execute("SELECT k, v FROM kv ORDER BY k").fetchall() == [("a", "scratch"), ("b", "new")]
        assert conn.execute("SELECT v FROM main.kv").fetchall() == [("file",)]
        with pytest.raises(RuntimeError), s.transaction() as tx:
            tx.conn.execute(upsert, ("c", "gone"))
            raise RuntimeError("rolled back")
        assert conn.execute("SELECT count(*) FROM kv").fetchone()[0] == 2
        with pytest.raises(StoreError) as exc, s.transaction() as tx:
            tx.conn.execute("INSERT INTO events_fts_state VALUES (2, 0)")  # the log's own: not copied
        assert exc.value.code == "STORE_READ_ONLY"
    assert sha(log) == before


def test_a_log_set_up_by_another_version_is_rebuilt_in_throwaway_copies(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    with LeanCtx(db) as lc:
        lc.bus.dispatch(PostMessage(channel="general", to="all", title="t", body="b"), actor="alice")
    raw = apsw.Connection(str(db))
    raw.execute("UPDATE projection_checkpoints SET version = version + 1 WHERE name = 'channels'")
    raw.execute("DELETE FROM channel_messages")  # the other version's rows: not this one's
    raw.close()
    before = sha(db)
    with LeanCtx(db, read_only=True) as lc:
        conn = lc.projections.reader("channels")
        assert [r[0] for r in conn.execute("SELECT title FROM channel_messages")] == ["t"]
        cp = next(c for c in lc.projections.checkpoints() if c["name"] == "channels")
        assert cp["stored_version"] == cp["version"]  # in the copies
        with pytest.raises(StoreError) as exc:
            lc.projections.rebuild()
        assert exc.value.code == "STORE_READ_ONLY"
    assert sha(db) == before
    plain = tmp_path / "plain.db"
    apsw.Connection(str(plain)).execute("CREATE TABLE x (y)")
    with pytest.raises(StoreError) as exc:
        SqliteEventStore(plain, read_only=True)
    assert exc.value.code == "NOT_A_LEAN_CTX_LOG"  # another application's database, read-only or not


# --- the CLI, read-only by the switch -----------------------------------------------------------

@pytest.fixture
def cli_log(tmp_path: Path) -> Path:
    """A log written through the CLI: a read (savings), messages, an agent, a proof; its FTS index
    current (a read-only log can be searched only so far as it is indexed)."""
    db = tmp_path / "cli.db"
    (tmp_path / ".git").mkdir()
    (tmp_path / "a.py").write_text("def f(x):\n    return x\n" * 40)
    for args in (["read", "a.py", "--mode", "signatures"], ["chat", "post", "-t", "hello", "-b", "world"],
                 ["agent", "register", "--type", "cursor"], ["proof", "--json"], ["events", "search", "x"]):
        p = cli(db, *args, cwd=tmp_path)
        assert p.returncode == 0, (args, p.stderr)
    return db


READ_VERBS: list[list[str]] = [
    ["events", "tail"], ["events", "lineage", "2"], ["events", "verify"], ["gain"], ["agent", "list"],
    ["chat", "peek"], ["chat", "state"], ["chat", "channels"], ["chat", "locks"], ["db", "info"],
    ["proof", "verify"], ["events", "search", "hello"],
]


def check_read_verbs(db: Path, cwd: Path, env: dict[str, str] | None = None,
                     prefix: list[str] | None = None) -> dict[str, Any]:
    out = {}
    for args in READ_VERBS:
        out[" ".join(args[:2])] = ok_json(cli(db, *args, "--json", env=env, cwd=cwd, prefix=prefix))
    assert out["db info"][0]["read_only"] is True
    assert [m["title"] for m in out["chat peek"][0]] == ["hello"]
    assert out["gain"][0]["totals"]["calls"] >= 1
    assert out["events verify"][0]["ok"] is True
    assert out["proof verify"][0]["ok"] is True
    assert any(e["kind"] == "message.posted" for e in out["events tail"])
    for args in (["chat", "post", "-t", "x", "-b", "y"], ["chat", "read"], ["agent", "heartbeat", "alice"]):
        err = refused(cli(db, *args, "--json", env=env, cwd=cwd, prefix=prefix))
        assert "read-only" in err["message"]
        p = cli(db, *args, env=env, cwd=cwd, prefix=prefix)
        assert p.returncode == 1 and p.stderr.startswith("error[STORE_READ_ONLY]:"), p.stderr
    return out


def test_cli_read_only_switch(cli_log: Path) -> None:
    before = sha(cli_log)
    head = ok_json(cli(cli_log, "db", "info", "--json"))[0]["head_position"]
    check_read_verbs(cli_log, cli_log.parent, env={"LEAN_CTX_READ_ONLY": "1"})
    assert sha(cli_log) == before
    assert ok_json(cli(cli_log, "db", "info", "--json"))[0]["head_position"] == head
    assert ok_json(cli(cli_log, "db", "info", "--json"))[0]["read_only"] is False


def test_chat_state_catches_up_only_what_it_shows(cli_log: Path) -> None:
    """``chat state`` reads strong projections only: the eventual ones are not folded for it
    (on a read-only log that would copy every table for nothing)."""
    def savings_at() -> int:
        info = ok_json(cli(cli_log, "db", "info", "--json"))[0]
        return next(p["position"] for p in info["projections"] if p["name"] == "savings")

    assert cli(cli_log, "chat", "post", "-t", "later", "-b", "x").returncode == 0
    at = savings_at()
    ok_json(cli(cli_log, "chat", "state", "--json"))
    assert savings_at() == at  # still behind the head: only `gain` & co. fold it
    assert ok_json(cli(cli_log, "gain", "--json")) and savings_at() > at


# --- permissions: a real unprivileged process on a chmod-ed directory --------------------------

def _unprivileged() -> list[str] | None:
    """How to run a command without the power to ignore permissions: nothing as a normal user,
    setpriv to nobody as root; None when neither is possible."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        return None
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run([*prefix, sys.executable, "-c", "import leanctx"], capture_output=True, check=False,
                           cwd="/")
    return prefix if probe.returncode == 0 else None


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory an unprivileged user may enter (pytest's tmp dirs are private to root)."""
    base = Path(tempfile.mkdtemp(prefix="lean-ctx-ro-"))
    base.chmod(0o755)
    yield base
    for p in (base, *base.rglob("*")):
        if p.is_dir():
            p.chmod(0o755)
    shutil.rmtree(base, ignore_errors=True)


def freeze(d: Path) -> None:
    """Read-only for everyone but root: files r--r--r--, directories r-xr-xr-x."""
    for p in d.iterdir():
        if p.is_dir():
            freeze(p)
        else:
            p.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    d.chmod(0o555)


def test_chmod_read_only_log_opens_read_only(shared: Path, cli_log: Path) -> None:
    prefix = _unprivileged()
    if prefix is None:
        pytest.skip("running as root without setpriv: no process here is stopped by file permissions "
                    "(test_cli_read_only_switch covers the read-only mode itself)")
    logdir = shared / "log"
    logdir.mkdir()
    db = logdir / "events.db"
    shutil.copy(cli_log, db)
    (shared / "a.py").write_text("x = 1\n")
    (shared / ".git").mkdir()
    proofs = cli_log.parent / "proofs"
    shutil.copytree(proofs, logdir / "proofs")
    # the user's own data dir, holding the keys that signed the proof (its trusted key)
    home = shared / "home"
    shutil.copytree(Path(os.environ["LEAN_CTX_HOME"]) / "keys", home / "keys")
    if prefix:
        for owned in (home, *home.rglob("*")):
            os.chown(owned, 65534, 65534)
    env = {"HOME": str(shared), "LEAN_CTX_HOME": str(home)}
    # 1. a closed log (no -wal): mode=ro cannot create the -shm, immutable=1 reads it
    freeze(logdir)
    before = sha(db)
    check_read_verbs(db, shared, env=env, prefix=prefix)
    assert sha(db) == before and sorted(p.name for p in logdir.iterdir()) == ["events.db", "proofs"]
    # 2. a live writer: -wal (with events not yet in the file) and -shm present; mode=ro sees them
    logdir.chmod(0o755)  # writable again for the writer, this process (which may not be root)
    db.chmod(0o644)
    with SqliteEventStore(db, read_only=False) as live:
        live.append("s", [note("only in the wal")])
        assert Path(f"{db}-wal").stat().st_size > 0
        for f in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            f.chmod(0o444)
        logdir.chmod(0o555)
        events = ok_json(cli(db, "events", "tail", "-n", "1", "--json", env=env, cwd=shared, prefix=prefix))
        assert events[0]["payload"]["reason"] == "only in the wal"
        assert ok_json(cli(db, "db", "info", "--json", env=env, cwd=shared, prefix=prefix))[0]["read_only"]
        refused(cli(db, "chat", "post", "-t", "x", "-b", "y", "--json", env=env, cwd=shared, prefix=prefix))
        # 3. a -wal holding events but no -shm, in a read-only directory: reading the file alone
        #    would miss them, so it is refused, saying why
        lone = shared / "lone"
        lone.mkdir()
        shutil.copy(db, lone / "events.db")
        shutil.copy(f"{db}-wal", lone / "events.db-wal")
        freeze(lone)
        err = refused(cli(lone / "events.db", "events", "tail", "--json", env=env, cwd=shared, prefix=prefix),
                      "STORE_OPEN_FAILED")
        assert "-wal" in err["message"] and "-shm" in err["message"]
        logdir.chmod(0o755)
        for f in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            f.chmod(0o644)


def test_agent_list_on_a_read_only_log_shows_stale_agents_without_recording_their_timeout(tmp_path: Path) -> None:
    """On a writable log the first listing that sees a stale agent records its timeout; a
    read-only log is listed as it is."""
    import time

    from leanctx.commands.agents import RegisterAgent

    db = tmp_path / "stale.db"
    (tmp_path / ".git").mkdir()
    with LeanCtx(db) as lc:  # registered an hour ago, never heard of since
        lc.bus.dispatch(RegisterAgent(agent_type="cursor", role="dev", agent_id="old"), actor="old",
                        now=time.time() - 3600, project=str(tmp_path))
    before = sha(db)
    agents = ok_json(cli(db, "agent", "list", "--json", env={"LEAN_CTX_READ_ONLY": "1"}, cwd=tmp_path))[0]
    assert [(a["agent_id"], a["status"], a["timed_out"]) for a in agents] == [("old", "stale", False)], agents
    assert sha(db) == before
    agents = ok_json(cli(db, "agent", "list", "--json", cwd=tmp_path))[0]  # writable: the timeout is recorded
    assert [(a["agent_id"], a["left_reason"], a["timed_out"]) for a in agents] == [("old", "heartbeat_timeout", True)]
