"""lean-ctx opens only its own logs, or an empty file it may make into one.

A database of another application (any schema object, a ``user_version`` or an
``application_id`` of its own) is ``NOT_A_LEAN_CTX_LOG`` and is left byte for byte as it was: no
WAL switch, no tables, no ``user_version`` rewritten, no ``-wal`` file. A file that is not SQLite
at all is ``STORE_OPEN_FAILED`` (SQLite says why), untouched too.
A lean-ctx log whose ``user_version`` was lost (restored from ``sqlite3 .dump``, which does not
carry it) still opens; one written by a newer schema is ``STORE_SCHEMA_NEWER``, unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from leanctx.app import LeanCtx
from leanctx.errors import StoreError
from leanctx.events import NewEvent, SqliteEventStore
from leanctx.events.kinds import AgentDeregistered
from leanctx.projections.fresh import REPLAY_APPLICATION_ID

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make(path: Path, *sql: str) -> Path:
    conn = apsw.Connection(str(path))
    for s in sql:
        conn.execute(s)
    conn.close()
    return path


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update({"LEAN_CTX_HOME": os.environ["LEAN_CTX_HOME"], "LEAN_CTX_NO_DAEMON": "1"})
    p = subprocess.run([LEAN_CTX, "--db", str(db), *args], capture_output=True, text=True, env=env, timeout=120,
                       check=False)
    assert "Traceback" not in p.stderr and "INTERNAL_ERROR" not in p.stdout + p.stderr, p.stdout + p.stderr
    return p


FOREIGN = {
    "an app's tables and user_version": ("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)",
                                         "INSERT INTO notes(body) VALUES ('keep me')", "PRAGMA user_version=7"),
    "tables, user_version 0": ("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)",),
    "an events table of its own": ("CREATE TABLE events(id INTEGER PRIMARY KEY, what TEXT)", "PRAGMA user_version=1"),
    "only a user_version": ("PRAGMA user_version=3",),
    "only an application_id": ("PRAGMA application_id=1234",),
    "a replay output": ("CREATE TABLE agents(id TEXT)", f"PRAGMA application_id={REPLAY_APPLICATION_ID}"),
}


@pytest.mark.parametrize("what", sorted(FOREIGN))
@pytest.mark.parametrize("read_only", [None, True])
def test_a_foreign_database_is_refused_untouched(tmp_path: Path, what: str, read_only: bool | None) -> None:
    db = make(tmp_path / "app.db", *FOREIGN[what])
    before = sha(db)
    with pytest.raises(StoreError) as exc:
        SqliteEventStore(db, read_only=read_only)
    assert exc.value.code == "NOT_A_LEAN_CTX_LOG" and exc.value.exit_code == 1
    assert str(db) in exc.value.message and "--db" in exc.value.message
    assert sha(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]  # no -wal, no -shm


def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path: Path) -> None:
    db = tmp_path / "notes.txt"
    db.write_text("just some notes, not a database at all\n" * 200)
    before = sha(db)
    for read_only in (None, True):
        with pytest.raises(StoreError) as exc:
            SqliteEventStore(db, read_only=read_only)
        assert exc.value.code == "STORE_OPEN_FAILED" and "not a database" in exc.value.message
    assert sha(db) == before and sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_db_info_on_another_apps_database(tmp_path: Path) -> None:
    """The audit's repro: ``--db app.db db info`` switched it to WAL, added 48 tables, set
    user_version 7 -> 1."""
    db = make(tmp_path / "app.db", *FOREIGN["an app's tables and user_version"])
    before = sha(db)
    p = cli(db, "db", "info", "--json")
    assert p.returncode == 1
    assert json.loads(p.stdout.strip().splitlines()[-1])["error"]["code"] == "NOT_A_LEAN_CTX_LOG"
    human = cli(db, "db", "info")
    assert human.returncode == 1 and "NOT_A_LEAN_CTX_LOG" in human.stdout + human.stderr
    doc = cli(db, "doctor", "--json")
    check = {c["name"]: c for c in json.loads(doc.stdout)["checks"]}["database"]
    assert check["status"] == "fail" and "NOT_A_LEAN_CTX_LOG" in check["detail"]
    assert sha(db) == before
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    assert conn.execute("PRAGMA user_version").fetchall()[0][0] == 7
    assert conn.execute("PRAGMA journal_mode").fetchall()[0][0] == "delete"
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["notes"]
    conn.close()


@pytest.mark.parametrize("how", ["missing", "empty file"])
def test_a_new_or_empty_file_becomes_a_log(tmp_path: Path, how: str) -> None:
    db = tmp_path / "events.db"
    if how == "empty file":
        db.write_bytes(b"")
    with LeanCtx(db) as lc:
        lc.store.append("s", [NewEvent(event=AgentDeregistered(agent_id="a", reason="r"))])
    with SqliteEventStore(db) as s:
        assert s.head().position == 1 and s.verify().ok


def test_a_log_that_lost_its_user_version_still_opens(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    with SqliteEventStore(db) as s:
        s.append("s", [NewEvent(event=AgentDeregistered(agent_id="a", reason="r"))])
    make(db, "PRAGMA user_version=0")
    with SqliteEventStore(db) as s:
        assert s.head().position == 1 and s.verify().ok


def test_a_log_of_a_newer_schema_is_refused_untouched(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    with SqliteEventStore(db) as s:
        s.append("s", [NewEvent(event=AgentDeregistered(agent_id="a", reason="r"))])
    make(db, "PRAGMA user_version=2")
    before = sha(db)
    for read_only in (None, True):
        with pytest.raises(StoreError) as exc:
            SqliteEventStore(db, read_only=read_only)
        assert exc.value.code == "STORE_SCHEMA_NEWER" and "upgrade lean-ctx" in exc.value.message
    assert sha(db) == before
