"""Edits made behind the store's back are noticed, and nothing is recorded on top of them.

- A log cut at its end (every event past N deleted) no longer reaches the positions its
  projections have seen: ``verify()`` and ``events verify`` / ``doctor`` say ``LOG_TRUNCATED``,
  appending is refused with that code until ``lean-ctx replay`` rebuilds the projections from
  what is left (or the file is restored); the full-text index, ahead of the head too, is rebuilt
  rather than left pointing at events that are gone.
- A dropped (or replaced) immutability trigger is ``TRIGGERS_MISSING`` in the same places and
  refuses appends until ``lean-ctx db restore-triggers`` puts it back: restoring it on open
  would hide the tampering.
- ``db info`` counts the rows: a log with a hole says so next to its head.

Tampering is done as the audit did: a raw SQLite connection on the real file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import apsw
import pytest

from leanctx.app import LeanCtx
from leanctx.commands.chat import PostMessage
from leanctx.errors import StoreError
from leanctx.events import NewEvent, SqliteEventStore
from leanctx.events.kinds import AgentDeregistered

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
TRIGGERS = ("events_no_update", "events_no_delete")


def note(text: str) -> NewEvent:
    return NewEvent(event=AgentDeregistered(agent_id="n", reason=text))


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update({"LEAN_CTX_HOME": os.environ["LEAN_CTX_HOME"], "LEAN_CTX_DB": str(db), "LEAN_CTX_AGENT_ID": "alice",
                "LEAN_CTX_NO_DAEMON": "1"})
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert "Traceback" not in p.stderr and "INTERNAL_ERROR" not in p.stdout + p.stderr, p.stdout + p.stderr
    return p


def last_json(p: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(p.stdout.strip().splitlines()[-1])


def raw(db: Path, *sql: str) -> None:
    conn = apsw.Connection(str(db))
    conn.set_busy_timeout(5000)
    try:
        for s in sql:
            conn.execute(s)
    finally:
        conn.close()


def trigger_sql(db: Path, name: str) -> str:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return str(conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchall()[0][0])
    finally:
        conn.close()


def triggers(db: Path) -> list[str]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"))
    finally:
        conn.close()


def cut(db: Path, keep: int) -> None:
    """Delete every event past ``keep`` (the delete trigger dropped for it and put back)."""
    trigger = trigger_sql(db, "events_no_delete")
    raw(db, "DROP TRIGGER events_no_delete", f"DELETE FROM events WHERE position > {keep}", trigger)


def post(lc: LeanCtx, title: str) -> Any:
    return lc.bus.dispatch(PostMessage(channel="general", to="all", title=title, body="x"), actor="alice")


@pytest.fixture
def chat_log(tmp_path: Path) -> Path:
    db = tmp_path / "events.db"
    with LeanCtx(db) as lc:
        for i in range(10):
            post(lc, f"m{i}")
        assert lc.store.head().position >= 20
    return db


# --- a log cut at its end ---------------------------------------------------------------------

def test_a_cut_tail_is_log_truncated_and_refuses_appends(chat_log: Path) -> None:
    with LeanCtx(chat_log) as lc:
        head = lc.store.head().position
    cut(chat_log, 16)
    with LeanCtx(chat_log) as lc:
        assert lc.store.head().position == 16
        problems = lc.store.integrity()
        assert [p.code for p in problems] == ["LOG_TRUNCATED"]
        msg = problems[0].message
        assert "ends at position 16" in msg and f"seen position {head}" in msg and "lean-ctx replay" in msg
        v = lc.store.verify()
        assert not v.ok and v.first_broken == 17 and v.checked == 16 and (v.reason or "").startswith("LOG_TRUNCATED")
        with pytest.raises(StoreError) as exc:
            post(lc, "after the cut")
        assert exc.value.code == "LOG_TRUNCATED" and exc.value.exit_code == 1
        with pytest.raises(StoreError) as exc:  # a bare append too, not only commands
            lc.store.append("s", [note("x")])
        assert exc.value.code == "LOG_TRUNCATED"
        assert lc.store.head().position == 16  # nothing recorded
        lc.projections.rebuild()  # what `lean-ctx replay` does: the projections now match what is left
        assert lc.store.integrity() == [] and lc.store.verify().ok
        assert post(lc, "after the replay") is not None
        assert lc.store.head().position > 16


def test_a_cut_tail_through_the_cli(chat_log: Path) -> None:
    cut(chat_log, 16)
    v = cli(chat_log, "events", "verify")
    assert v.returncode == 1 and "LOG_TRUNCATED" in v.stdout and "position 17" in v.stdout
    doc = cli(chat_log, "doctor", "--json")
    db_check = {c["name"]: c for c in last_json(doc)["checks"]}["database"]
    assert doc.returncode == 1 and db_check["status"] == "fail" and "LOG_TRUNCATED" in db_check["detail"]
    assert "lean-ctx replay" in db_check["fix"]
    info = last_json(cli(chat_log, "db", "info", "--json"))
    assert [p["code"] for p in info["problems"]] == ["LOG_TRUNCATED"] and info["head_position"] == 16
    human = cli(chat_log, "db", "info")
    assert human.returncode == 0 and "LOG_TRUNCATED" in human.stdout
    refused = cli(chat_log, "chat", "post", "--to", "all", "--title", "new", "--body", "x", "--json")
    assert refused.returncode == 1 and last_json(refused)["error"]["code"] == "LOG_TRUNCATED"
    assert cli(chat_log, "replay").returncode == 0
    ok = cli(chat_log, "chat", "post", "--to", "all", "--title", "new", "--body", "x")
    assert ok.returncode == 0 and "posted #9 " in ok.stdout  # the log holds 8 messages, not 10
    assert cli(chat_log, "events", "verify").returncode == 0


@pytest.mark.parametrize("mode", ["catchup", "inline"])
def test_the_full_text_index_past_the_head_is_rebuilt(tmp_path: Path, mode: str) -> None:
    """Index rows of events that are gone would answer for the new events at their positions."""
    db = tmp_path / "bare.db"
    s = SqliteEventStore(db)
    with s:
        s.append("s", [note(f"walrus {i}") for i in range(5)])
        s.index_fts()
    cut(db, 3)
    s = SqliteEventStore(db, fts_mode=mode)
    with s:
        assert s.fts_position() == 5 and s.head().position == 3
        s.append("s", [note("seal")])
        if mode == "inline":  # indexed by the append itself, after the stale rows were dropped
            assert s.fts_position() == 4
        assert [h.event.position for h in s.search("seal")] == [4]
        assert sorted(h.event.position for h in s.search("walrus")) == [1, 2, 3]
        assert s.fts_position() == 4


# --- the immutability triggers ----------------------------------------------------------------

def test_a_dropped_trigger_is_reported_and_refuses_appends_until_restored(chat_log: Path) -> None:
    raw(chat_log, "DROP TRIGGER events_no_delete")
    with LeanCtx(chat_log) as lc:
        head = lc.store.head().position
        problems = lc.store.integrity()
        assert [p.code for p in problems] == ["TRIGGERS_MISSING"]
        assert "events_no_delete" in problems[0].message and "restore-triggers" in problems[0].message
        v = lc.store.verify()
        assert not v.ok and v.checked == head and v.first_broken is None
        assert (v.reason or "").startswith("TRIGGERS_MISSING")
        with pytest.raises(StoreError) as exc:
            post(lc, "unprotected")
        assert exc.value.code == "TRIGGERS_MISSING"
        assert lc.store.head().position == head
        assert triggers(chat_log) == ["events_no_update"]  # opening did not put it back
        assert lc.store.restore_triggers() == ["events_no_delete"]
        assert lc.store.restore_triggers() == []
        assert lc.store.integrity() == [] and lc.store.verify().ok
        post(lc, "protected again")
    with pytest.raises(apsw.ConstraintError, match="EVENT_IMMUTABLE"):
        raw(chat_log, "DELETE FROM events WHERE position = 1")


def test_a_trigger_replaced_by_a_harmless_one_counts_as_missing(chat_log: Path) -> None:
    raw(chat_log, "DROP TRIGGER events_no_update",
        "CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT 1; END")
    with LeanCtx(chat_log) as lc:
        assert [p.code for p in lc.store.integrity()] == ["TRIGGERS_MISSING"]
        assert "events_no_update" in lc.store.integrity()[0].message
        assert lc.store.restore_triggers() == ["events_no_update"]
        assert lc.store.integrity() == []
    with pytest.raises(apsw.ConstraintError, match="EVENT_IMMUTABLE"):
        raw(chat_log, "UPDATE events SET actor = 'mallory' WHERE position = 1")


def test_dropped_triggers_through_the_cli(chat_log: Path) -> None:
    raw(chat_log, "DROP TRIGGER events_no_delete")
    v = cli(chat_log, "events", "verify", "--json")
    assert v.returncode == 1 and last_json(v)["reason"].startswith("TRIGGERS_MISSING")
    v = cli(chat_log, "events", "verify")
    assert v.returncode == 1 and v.stdout.startswith("NOT OK: TRIGGERS_MISSING") and "None" not in v.stdout, v.stdout
    doc = cli(chat_log, "doctor", "--json")
    db_check = {c["name"]: c for c in last_json(doc)["checks"]}["database"]
    assert doc.returncode == 1 and "TRIGGERS_MISSING" in db_check["detail"] and "restore-triggers" in db_check["fix"]
    refused = cli(chat_log, "chat", "post", "--to", "all", "--title", "new", "--body", "x", "--json")
    assert refused.returncode == 1 and last_json(refused)["error"]["code"] == "TRIGGERS_MISSING"
    assert triggers(chat_log) == ["events_no_update"]
    r = cli(chat_log, "db", "restore-triggers", "--json")
    out = last_json(r)
    assert r.returncode == 0 and out["restored"] == ["events_no_delete"] and out["verify"]["ok"] is True
    assert triggers(chat_log) == sorted(TRIGGERS)
    assert cli(chat_log, "events", "verify").returncode == 0
    again = cli(chat_log, "db", "restore-triggers")
    assert again.returncode == 0 and "nothing to restore" in again.stdout


def test_a_store_kept_open_notices_what_another_connection_did(chat_log: Path) -> None:
    """A long-running process (the daemon, an MCP server) checks each appending transaction, not
    only its open: the triggers again whenever the schema changed since they were last intact."""
    with LeanCtx(chat_log) as lc:
        post(lc, "before")  # the triggers were found intact: not read again while the schema stays
        raw(chat_log, "DROP TRIGGER events_no_delete")
        with pytest.raises(StoreError) as exc:
            post(lc, "after the drop")
        assert exc.value.code == "TRIGGERS_MISSING"
        assert lc.store.restore_triggers() == ["events_no_delete"]
        post(lc, "restored")
        cut(chat_log, 10)
        with pytest.raises(StoreError) as exc:
            post(lc, "after the cut")
        assert exc.value.code == "LOG_TRUNCATED"


# --- db info counts rows ----------------------------------------------------------------------

def test_db_info_shows_a_hole_in_the_log(chat_log: Path) -> None:
    with SqliteEventStore(chat_log) as s:
        head = s.head().position
    trigger = trigger_sql(chat_log, "events_no_delete")
    raw(chat_log, "DROP TRIGGER events_no_delete", "DELETE FROM events WHERE position = 5", trigger)
    info = last_json(cli(chat_log, "db", "info", "--json"))
    assert info["events"] == head - 1 and info["head_position"] == head
    assert [p["code"] for p in info["problems"]] == ["LOG_GAP"]
    human = cli(chat_log, "db", "info").stdout
    assert f"{head - 1:,}" in human and "gap" in human and "lean-ctx events verify" in human
    fine = chat_log.with_name("fine.db")
    with SqliteEventStore(fine) as s:
        s.append("s", [note("a"), note("b")])
    ok = last_json(cli(fine, "db", "info", "--json"))
    assert ok["events"] == ok["head_position"] == 2 and ok["problems"] == []
