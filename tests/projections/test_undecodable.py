"""An event whose payload does not decode, on a chain that holds (it was recomputed after the
edit, as the audit's R9 did), is ``EVENT_UNDECODABLE`` naming its position and kind, wherever a
projection folds it: replay (in place and ``--verify``), a catch-up before a read, a command.
Never ``INTERNAL_ERROR``, which says "this is a bug in lean-ctx"."""

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
from leanctx.errors import LeanCtxError, StoreError
from leanctx.events import NewEvent, SqliteEventStore
from leanctx.events.codec import canonical_bytes, chain_hash
from leanctx.events.kinds import AgentHeartbeat

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


def rewrite(db: Path, position: int, payload: bytes) -> None:
    """Replace the payload at ``position`` and recompute the chain from there, the immutability
    trigger dropped for the edit and put back after it."""
    conn = apsw.Connection(str(db))
    try:
        trigger: Any = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events_no_update'").fetchall()[0][0]
        with conn:
            conn.execute("DROP TRIGGER events_no_update")
            rows: list[Any] = conn.execute("SELECT * FROM events WHERE position >= ? ORDER BY position",
                                (position - 1,)).fetchall()
            prev = rows[0][-1] if rows[0][0] == position - 1 else "0" * 64
            for r in rows:
                if r[0] < position:
                    continue
                body = payload if r[0] == position else bytes(r[14])
                h = chain_hash(prev, canonical_bytes(tuple(r[:14]), body))
                conn.execute("UPDATE events SET payload = ?, prev_hash = ?, hash = ? WHERE position = ?",
                             (body, prev, h, r[0]))
                prev = h
            conn.execute(trigger)
    finally:
        conn.close()


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEAN_CTX_DB": str(db), "LEAN_CTX_AGENT_ID": "a", "LEAN_CTX_NO_DAEMON": "1"}
    return subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=env, timeout=120, check=False)


def position_of(lc: LeanCtx, kind: str, nth: int = 0) -> int:
    return [e.position for e in lc.store.read_all() if e.kind == kind][nth]


@pytest.fixture
def chat_log(tmp_path: Path) -> tuple[Path, int]:
    """A log of ten chat posts; the second message.posted made undecodable (a field missing)."""
    db = tmp_path / "events.db"
    with LeanCtx(db) as lc:
        for j in range(10):
            lc.bus.dispatch(PostMessage(title=f"m{j}", body="x"), actor="a")
        pos = position_of(lc, "message.posted", 1)
    rewrite(db, pos, b'{"kind":"message.posted","channel":"general"}')
    return db, pos


def assert_undecodable(exc: LeanCtxError, position: int, kind: str) -> None:
    assert exc.code == "EVENT_UNDECODABLE"
    assert f"position {position}" in exc.message and kind in exc.message
    assert exc.details["position"] == position and exc.details["kind"] == kind


def test_the_chain_still_holds(chat_log: tuple[Path, int]) -> None:
    db, _ = chat_log
    p = cli(db, "events", "verify")
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.parametrize("verify", [True, False])
def test_replay_names_the_event(chat_log: tuple[Path, int], verify: bool) -> None:
    db, pos = chat_log
    p = cli(db, "--json", "replay", *(["--verify"] if verify else []))
    out = p.stdout + p.stderr
    assert p.returncode == 1 and "INTERNAL_ERROR" not in out and "Traceback" not in out, out
    err = json.loads(out.strip().splitlines()[-1])["error"]
    assert err["code"] == "EVENT_UNDECODABLE", err
    assert err["details"]["position"] == pos and err["details"]["kind"] == "message.posted"


def test_rebuild_in_the_library(chat_log: tuple[Path, int]) -> None:
    db, pos = chat_log
    with LeanCtx(db) as lc:
        with pytest.raises(StoreError) as ei:
            lc.projections.rebuild("channels")
        assert_undecodable(ei.value, pos, "message.posted")


def test_a_catch_up_before_a_read(tmp_path: Path) -> None:
    """The ledger (eventual) folds tool.called when read: an undecodable one stops the read."""
    db = tmp_path / "events.db"
    with LeanCtx(db) as lc:
        for j in range(3):
            lc.bus.dispatch(PostMessage(title=f"m{j}", body="x"), actor="a")
        pos = position_of(lc, "tool.called", 1)
    rewrite(db, pos, b"{not json")
    with LeanCtx(db) as lc:
        with pytest.raises(LeanCtxError) as ei:
            lc.projections.reader("ledger")
        assert_undecodable(ei.value, pos, "tool.called")
    p = cli(db, "--json", "agent", "ledger")
    assert p.returncode == 1 and "INTERNAL_ERROR" not in p.stdout + p.stderr, p.stdout + p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1])["error"]["code"] == "EVENT_UNDECODABLE"


def test_a_command_that_catches_up_first(tmp_path: Path) -> None:
    """A strong projection behind the head (events appended without it) folds them in the next
    command's transaction: an undecodable one refuses the command."""
    db = tmp_path / "events.db"
    LeanCtx(db).close()
    with SqliteEventStore(db) as bare:  # an event appended without projections, then broken
        bare.append("agent:z", [NewEvent(event=AgentHeartbeat(agent_id="z"))])
    rewrite(db, 1, b'{"kind":"agent.heartbeat","agent_id":7}')
    with LeanCtx(db) as lc:
        with pytest.raises(LeanCtxError) as ei:
            lc.bus.dispatch(PostMessage(title="m", body="x"), actor="a")
        assert_undecodable(ei.value, 1, "agent.heartbeat")
