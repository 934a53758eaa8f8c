"""The savings projection's calls and bounces (``leanctx.projections.savings`` documents them):
the call index of a context event in its conversation, and the bounce a full read resolves.
``leanctx.commands.read_rules.is_bounce`` reads the same tables with the same window."""

from __future__ import annotations

from typing import Any

from ..events import StoredEvent
from ..events.kinds.context import FileRead

BOUNCE_WINDOW = 3  # a full read at most this many calls after the compressed one is a bounce


def next_call(conn: Any, agent: str, session: str, call_id: str) -> int:
    """The call index of this event in its conversation (see the module doc)."""
    row = conn.execute(
        "SELECT calls, last_call FROM savings_conversations WHERE agent = ? AND session = ?", (agent, session)
    ).fetchone()
    if row is not None and row[1] == call_id:
        return int(row[0])
    calls = (int(row[0]) if row else 0) + 1
    conn.execute(
        "INSERT INTO savings_conversations (agent, session, calls, last_call) VALUES (?, ?, ?, ?)"
        " ON CONFLICT(agent, session) DO UPDATE SET calls = excluded.calls, last_call = excluded.last_call",
        (agent, session, calls, call_id),
    )
    # compressed reads that fell out of every future window can never bounce: forget them
    conn.execute(
        "DELETE FROM savings_pending WHERE agent = ? AND session = ? AND call_index < ?",
        (agent, session, calls - BOUNCE_WINDOW),
    )
    return calls


def resolve_bounces(conn: Any, event: StoredEvent, agent: str, session: str, ev: FileRead, call: int) -> None:
    pending = conn.execute(
        "SELECT p.position, p.call_index, c.mode, c.sent_tokens, c.ts, c.day FROM savings_pending p"
        " JOIN savings_calls c ON c.position = p.position"
        " WHERE p.agent = ? AND p.session = ? AND p.path = ? AND p.content_hash = ? AND p.call_index >= ?"
        " ORDER BY p.position",
        (agent, session, ev.path, ev.content_hash, call - BOUNCE_WINDOW),
    ).fetchall()
    if pending:
        # one bounce per full read: charged to the closest compressed read before it; every
        # compressed read in the window has its savings retracted and its tokens wasted, once
        conn.executemany(
            "UPDATE savings_calls SET baseline_tokens = 0, wasted_tokens = sent_tokens"
            " WHERE position = ?",
            [(p[0],) for p in pending],
        )
        pos, idx, mode, _, ts, day = pending[-1]
        conn.execute("UPDATE savings_calls SET bounced = 1 WHERE position = ?", (pos,))
        conn.execute(
            "INSERT INTO savings_bounces (position, full_position, ts, day, agent, session, path, mode, calls_between,"
            " wasted_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (pos, event.position, ts, day, agent, session, ev.path, mode, call - idx, sum(p[3] for p in pending)),
        )
    # the full read answers every earlier compressed read of this path: none can bounce later
    conn.execute("DELETE FROM savings_pending WHERE agent = ? AND session = ? AND path = ?", (agent, session, ev.path))
