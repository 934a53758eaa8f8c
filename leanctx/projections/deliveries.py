"""Deliveries: what each conversation has already received of each file (strong).

Folded from ``file.read`` events; ``session.context_lost`` (the conversation's client compacted
or reset its context) forgets what that conversation received, so it is sent content, never a
stub, for anything it had before (its ``F`` references stay: they name paths). A *conversation* is an agent id together with a session id;
events without both (the CLI without ``--session``, a caller without an agent) are not folded
here, so such a reader never has anything on record and never receives an "unchanged" stub.

- ``deliveries``: (project, agent, session, path, mode) → the content hash last received in
  that mode (``mode`` as the event records it: ``full``, ``signatures``, ``lines:1-40``, ...).
  A stub re-confirms the same hash, so it changes nothing but the position.
- ``delivery_latest``: (project, agent, session, path) → the content hash of the last read in
  any mode (what ``diff`` compares against) and that mode.
- ``delivery_refs``: (project, session, path) → the session's file reference number
  (``F1``..``Fn``): the handler picks it (the next free one) and records it on the event; the
  fold copies it, so the rows are a pure function of the events.

A file a read only named past its cap (mode ``unsent``) gets its reference and nothing else:
the conversation received no content, so it is neither a stub's nor a diff's base.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..events import StoredEvent
from ..events.kinds.context import UNSENT_MODE, FileRead
from ..events.kinds.session import SessionContextLost
from .base import Projection


class Delivery(msgspec.Struct, frozen=True):
    content_hash: str
    mode: str
    position: int
    ts: str


class Deliveries(Projection):
    name = "deliveries"
    version = 3
    kinds = frozenset({"file.read", "session.context_lost"})
    tables = {
        "deliveries": """CREATE TABLE IF NOT EXISTS deliveries (
            project      TEXT NOT NULL,
            agent        TEXT NOT NULL,
            session      TEXT NOT NULL,
            path         TEXT NOT NULL,
            mode         TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            position     INTEGER NOT NULL,
            ts           TEXT NOT NULL,
            PRIMARY KEY (project, agent, session, path, mode)
        )""",
        "delivery_latest": """CREATE TABLE IF NOT EXISTS delivery_latest (
            project      TEXT NOT NULL,
            agent        TEXT NOT NULL,
            session      TEXT NOT NULL,
            path         TEXT NOT NULL,
            mode         TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            position     INTEGER NOT NULL,
            ts           TEXT NOT NULL,
            PRIMARY KEY (project, agent, session, path)
        )""",
        "delivery_refs": """CREATE TABLE IF NOT EXISTS delivery_refs (
            project  TEXT NOT NULL,
            session  TEXT NOT NULL,
            path     TEXT NOT NULL,
            ref      INTEGER NOT NULL,
            position INTEGER NOT NULL,
            PRIMARY KEY (project, session, path)
        )""",
    }
    indexes = ("CREATE INDEX IF NOT EXISTS delivery_refs_n ON delivery_refs (project, session, ref)",)

    def apply(self, conn: Any, event: StoredEvent) -> None:
        ev = event.data()
        if isinstance(ev, SessionContextLost):
            for table in ("deliveries", "delivery_latest"):
                conn.execute(f"DELETE FROM {table} WHERE project = ? AND agent = ? AND session = ?",
                             (event.project or "", ev.agent_id, ev.session_id))
            return
        if not isinstance(ev, FileRead):
            return
        project = event.project or ""
        session = ev.session_id
        if session and ev.ref and ev.ref[:1] == "F" and ev.ref[1:].isdigit():
            conn.execute(
                "INSERT INTO delivery_refs (project, session, path, ref, position) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(project, session, path) DO NOTHING",
                (project, session, ev.path, int(ev.ref[1:]), event.position),
            )
        agent = event.actor
        if not (agent and session) or ev.mode == UNSENT_MODE:  # named past a cap: the conversation got no content
            return
        row = (project, agent, session, ev.path, ev.mode, ev.content_hash, event.position, event.ts)
        for table, key in (("deliveries", "project, agent, session, path, mode"),
                           ("delivery_latest", "project, agent, session, path")):
            conn.execute(
                f"INSERT INTO {table} (project, agent, session, path, mode, content_hash, position, ts)"
                f" VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT({key})"
                " DO UPDATE SET mode = excluded.mode, content_hash = excluded.content_hash,"
                " position = excluded.position, ts = excluded.ts",
                row,
            )


# --- queries -------------------------------------------------------------------------


def last_delivery(conn: Any, agent: str | None, session: str | None, path: str, mode: str, *,
                  project: str | None = None) -> Delivery | None:
    """What this conversation last received of ``path`` in ``mode`` (None without both ids)."""
    if not (agent and session):
        return None
    row = conn.execute(
        "SELECT content_hash, mode, position, ts FROM deliveries WHERE project = ? AND agent = ? AND session = ?"
        " AND path = ? AND mode = ?",
        (project or "", agent, session, path, mode),
    ).fetchone()
    return Delivery(*row) if row else None


def latest_delivery(conn: Any, agent: str | None, session: str | None, path: str, *,
                    project: str | None = None) -> Delivery | None:
    """The last read of ``path`` by this conversation, in any mode (what ``diff`` compares with)."""
    if not (agent and session):
        return None
    row = conn.execute(
        "SELECT content_hash, mode, position, ts FROM delivery_latest WHERE project = ? AND agent = ?"
        " AND session = ? AND path = ?",
        (project or "", agent, session, path),
    ).fetchone()
    return Delivery(*row) if row else None


def ref_for(conn: Any, session: str | None, path: str, *, project: str | None = None) -> str | None:
    """The session's reference (``F3``) for ``path``, if it has one."""
    if not session:
        return None
    row = conn.execute(
        "SELECT ref FROM delivery_refs WHERE project = ? AND session = ? AND path = ?", (project or "", session, path)
    ).fetchone()
    return f"F{row[0]}" if row else None


def next_ref_number(conn: Any, session: str, *, project: str | None = None) -> int:
    """The next free reference number of a session (1 for a new session)."""
    row = conn.execute(
        "SELECT max(ref) FROM delivery_refs WHERE project = ? AND session = ?", (project or "", session)
    ).fetchone()
    return (row[0] or 0) + 1
