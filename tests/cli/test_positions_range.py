"""Positions, cursors and sequence numbers beyond SQLite's 64-bit integers.

A position no log can hold (2^63 and more, or far below 0) is an unknown position like any
other: the same coded error (``EVENT_NOT_FOUND``, ``EVENT_CURSOR_AHEAD``,
``CHAT_MESSAGE_NOT_FOUND``) or the same empty answer, never ``OverflowError``/``INTERNAL_ERROR``.
The store is checked directly, then every CLI verb that takes a position through the real
console script.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.errors import NotFound
from leanctx.events import NewEvent, SqliteEventStore
from leanctx.events.kinds import AgentHeartbeat

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
HUGE = 10**20  # past 2^63 - 1
BIG = (2**63, HUGE, 2**64 + 5)
LOW = (-(2**63) - 1, -HUGE)


@pytest.fixture
def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    s = SqliteEventStore(tmp_path / "p.db")
    s.append("agent:a", [NewEvent(event=AgentHeartbeat(agent_id="a")) for _ in range(3)])
    yield s
    s.close()


def test_store_get_and_lineage_out_of_range_are_unknown(store: SqliteEventStore) -> None:
    for pos in (*BIG, *LOW, 2**63 - 1, 0):
        assert store.get(pos) is None
        with pytest.raises(NotFound) as exc:
            store.lineage(pos)
        assert exc.value.code == "EVENT_NOT_FOUND" and str(pos) in exc.value.message


def test_store_reads_with_out_of_range_cursors(store: SqliteEventStore) -> None:
    every = [1, 2, 3]
    for since in BIG:
        assert store.read_all(since) == []
        assert store.wait(since, timeout=0) == []
        assert store.read_stream("agent:a", from_version=since) == []
    for since in LOW:
        assert [e.position for e in store.read_all(since)] == every
        assert [e.version for e in store.read_stream("agent:a", from_version=since)] == every
    for n in BIG:
        assert [e.position for e in store.read_all(0, limit=n)] == every
        assert [e.position for e in store.read_last(n)] == every
        assert [e.version for e in store.read_stream("agent:a", limit=n)] == every


# --- CLI --------------------------------------------------------------------------------------

def run(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LEAN_CTX_DEBUG"}
    env.update(LEAN_CTX_DB=str(db), LEAN_CTX_AGENT_ID="alice")
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert "Traceback" not in p.stderr and "INTERNAL_ERROR" not in p.stdout + p.stderr, p.stdout + p.stderr
    assert "Overflow" not in p.stdout + p.stderr, p.stdout + p.stderr
    return p


def code_of(p: subprocess.CompletedProcess[str]) -> str:
    return json.loads(p.stdout.strip().splitlines()[-1])["error"]["code"]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "cli.db"
    p = run(path, "chat", "post", "-t", "hello", "-b", "world")
    assert p.returncode == 0, p.stderr
    return path


def test_events_lineage_out_of_range_is_event_not_found(db: Path) -> None:
    for pos in ("0", "9223372036854775807", "9223372036854775808", "99999999999999999999"):
        p = run(db, "events", "lineage", pos)
        assert p.returncode == 2 and p.stderr.startswith("error[EVENT_NOT_FOUND]: no event at position"), p.stderr
        p = run(db, "events", "lineage", pos, "--json")
        assert p.returncode == 2 and code_of(p) == "EVENT_NOT_FOUND"


def outcome(p: subprocess.CompletedProcess[str]) -> tuple[int, str]:
    """(exit status, error code or the output) of a --json call."""
    return (p.returncode, code_of(p) if p.returncode else p.stdout)


def test_events_tail_out_of_range(db: Path) -> None:
    # whatever `tail` answers for an unknown position, one past any log answers the same
    assert outcome(run(db, "events", "tail", "--since", str(HUGE), "--json")) == \
        outcome(run(db, "events", "tail", "--since", "1000", "--json"))
    assert outcome(run(db, "events", "tail", "--since", str(-HUGE), "--json")) == \
        outcome(run(db, "events", "tail", "--since", "-1", "--json"))
    p = run(db, "events", "tail", "-n", str(HUGE), "--json")
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 2


def test_chat_event_read_cursor_out_of_range_is_cursor_ahead(db: Path) -> None:
    p = run(db, "chat", "event", "read", "--since", str(HUGE), "--json")
    assert p.returncode == 2 and code_of(p) == "EVENT_CURSOR_AHEAD"


def test_chat_seq_out_of_range_is_message_not_found(db: Path) -> None:
    p = run(db, "chat", "peek", "--seq", str(HUGE), "--json")
    assert p.returncode == 2 and code_of(p) == "CHAT_MESSAGE_NOT_FOUND"
    unknown = code_of(run(db, "chat", "post", "-t", "re", "-b", "x", "--reply", "999", "--json"))
    p = run(db, "chat", "post", "-t", "re", "-b", "x", "--reply", str(HUGE), "--json")
    assert p.returncode == 2 and code_of(p) == unknown
