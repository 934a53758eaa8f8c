"""Sessions: each conversation's task (step i/n), findings, decisions, saved snapshots and the
archives it produced. File refs (F1..Fn with hashes) are read from the ``deliveries`` tables.

- ``sessions``: session → agent, project, task, step, total, first and last event.
- ``session_notes``: the session's findings and decisions, numbered per session.
- ``session_snapshots``: (project, name) → a copy of a session's task and notes taken when
  ``session.saved`` was folded; ``session.loaded`` copies it back into a session.
- ``session_archives``: archive ids written by reads, shell runs and searches of the session.

Every row is a pure function of the events (``seq`` is the next number in the table, the
snapshot is a copy of rows the same events produced).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec

from ..events import StoredEvent
from ..events.kinds.session import (
    SessionLoaded,
    SessionNoted,
    SessionReset,
    SessionSaved,
    SessionTaskSet,
)
from .base import Projection

NOTE_KINDS = ("finding", "decision")
_enc = msgspec.json.Encoder()


class Note(msgspec.Struct, frozen=True):
    seq: int
    note: str  # finding | decision
    text: str
    ts: str
    path: str | None = None


class FileRef(msgspec.Struct, frozen=True):
    ref: str  # F1
    path: str
    content_hash: str | None


class ArchiveRef(msgspec.Struct, frozen=True):
    archive_id: str
    source: str


class SessionView(msgspec.Struct, frozen=True):
    session_id: str
    agent_id: str | None
    project: str
    task: str | None
    step: int
    total: int
    started_at: str
    updated_at: str
    findings: int
    decisions: int
    loaded_from: str | None = None


class Snapshot(msgspec.Struct, frozen=True):
    name: str
    session_id: str
    agent_id: str
    task: str | None
    step: int
    total: int
    notes: list[Note]
    ts: str


_notes_dec = msgspec.json.Decoder(list[Note])


class Sessions(Projection):
    name = "sessions"
    version = 1
    kinds = frozenset({"session.task_set", "session.noted", "session.saved", "session.loaded", "session.reset",
                       "file.read", "shell.ran", "search.ran"})
    tables = {
        "sessions": """CREATE TABLE IF NOT EXISTS sessions (
            session_id  TEXT PRIMARY KEY,
            project     TEXT NOT NULL,
            agent_id    TEXT,
            task        TEXT,
            step        INTEGER NOT NULL DEFAULT 0,
            total       INTEGER NOT NULL DEFAULT 0,
            started_at  TEXT NOT NULL,
            updated_at  TEXT NOT NULL,
            position    INTEGER NOT NULL,
            loaded_from TEXT
        )""",
        "session_notes": """CREATE TABLE IF NOT EXISTS session_notes (
            session_id TEXT NOT NULL,
            seq        INTEGER NOT NULL,
            note       TEXT NOT NULL,
            text       TEXT NOT NULL,
            path       TEXT,
            ts         TEXT NOT NULL,
            position   INTEGER NOT NULL,
            PRIMARY KEY (session_id, seq)
        )""",
        "session_snapshots": """CREATE TABLE IF NOT EXISTS session_snapshots (
            project    TEXT NOT NULL,
            name       TEXT NOT NULL,
            session_id TEXT NOT NULL,
            agent_id   TEXT NOT NULL,
            task       TEXT,
            step       INTEGER NOT NULL,
            total      INTEGER NOT NULL,
            notes      TEXT NOT NULL,
            ts         TEXT NOT NULL,
            position   INTEGER NOT NULL,
            PRIMARY KEY (project, name)
        )""",
        "session_archives": """CREATE TABLE IF NOT EXISTS session_archives (
            session_id TEXT NOT NULL,
            archive_id TEXT NOT NULL,
            source     TEXT NOT NULL,
            position   INTEGER NOT NULL,
            PRIMARY KEY (session_id, archive_id)
        )""",
    }
    indexes = ("CREATE INDEX IF NOT EXISTS sessions_project ON sessions (project, agent_id, updated_at)",)

    def _touch(self, conn: Any, event: StoredEvent, session_id: str, agent_id: str | None) -> None:
        conn.execute(
            "INSERT INTO sessions (session_id, project, agent_id, started_at, updated_at, position)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET updated_at = excluded.updated_at,"
            " position = excluded.position, agent_id = coalesce(excluded.agent_id, sessions.agent_id)",
            (session_id, event.project or "", agent_id, event.ts, event.ts, event.position),
        )

    def apply(self, conn: Any, event: StoredEvent) -> None:
        ev = event.data()
        if isinstance(ev, SessionTaskSet):
            self._touch(conn, event, ev.session_id, ev.agent_id)
            conn.execute("UPDATE sessions SET task = ?, step = ?, total = ? WHERE session_id = ?",
                         (ev.task, ev.step, ev.total, ev.session_id))
        elif isinstance(ev, SessionNoted):
            self._touch(conn, event, ev.session_id, ev.agent_id)
            seq = conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM session_notes WHERE session_id = ?",
                               (ev.session_id,)).fetchone()[0]
            conn.execute("INSERT INTO session_notes (session_id, seq, note, text, path, ts, position)"
                         " VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (ev.session_id, seq, ev.note, ev.text, ev.path, event.ts, event.position))
        elif isinstance(ev, SessionSaved):
            self._touch(conn, event, ev.session_id, ev.agent_id)
            row = conn.execute("SELECT task, step, total FROM sessions WHERE session_id = ?",
                               (ev.session_id,)).fetchone()
            notes = session_notes(conn, ev.session_id)
            conn.execute(
                "INSERT INTO session_snapshots (project, name, session_id, agent_id, task, step, total, notes, ts,"
                " position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(project, name) DO UPDATE SET"
                " session_id = excluded.session_id, agent_id = excluded.agent_id, task = excluded.task,"
                " step = excluded.step, total = excluded.total, notes = excluded.notes, ts = excluded.ts,"
                " position = excluded.position",
                (event.project or "", ev.name, ev.session_id, ev.agent_id, row[0], row[1], row[2],
                 _enc.encode(notes).decode(), event.ts, event.position),
            )
        elif isinstance(ev, SessionLoaded):
            snap = get_snapshot(conn, ev.name, project=event.project or "")
            self._touch(conn, event, ev.session_id, ev.agent_id)
            if snap is None:  # the handler checked; a log edited by hand changes nothing
                return
            conn.execute("UPDATE sessions SET task = ?, step = ?, total = ?, loaded_from = ? WHERE session_id = ?",
                         (snap.task, snap.step, snap.total, ev.name, ev.session_id))
            conn.execute("DELETE FROM session_notes WHERE session_id = ?", (ev.session_id,))
            conn.executemany(
                "INSERT INTO session_notes (session_id, seq, note, text, path, ts, position) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(ev.session_id, i + 1, n.note, n.text, n.path, n.ts, event.position) for i, n in enumerate(snap.notes)],
            )
        elif isinstance(ev, SessionReset):
            self._touch(conn, event, ev.session_id, ev.agent_id)
            conn.execute("UPDATE sessions SET task = NULL, step = 0, total = 0, loaded_from = NULL"
                         " WHERE session_id = ?", (ev.session_id,))
            conn.execute("DELETE FROM session_notes WHERE session_id = ?", (ev.session_id,))
        else:  # file.read, shell.ran, search.ran
            sid = getattr(ev, "session_id", None)
            archive = getattr(ev, "archive_id", None)
            if sid and archive:
                source = {"file.read": "read", "shell.ran": "shell", "search.ran": "search"}.get(event.kind, "?")
                conn.execute("INSERT INTO session_archives (session_id, archive_id, source, position)"
                             " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING", (sid, archive, source, event.position))


# --- queries ---------------------------------------------------------------------------------

_SCOLS = "session_id, agent_id, project, task, step, total, started_at, updated_at, loaded_from"


def _view(conn: Any, row: tuple[Any, ...]) -> SessionView:
    sid, agent, project, task, step, total, started, updated, loaded = row
    counts = dict(conn.execute("SELECT note, count(*) FROM session_notes WHERE session_id = ? GROUP BY note",
                               (sid,)).fetchall())
    return SessionView(sid, agent, project, task, step, total, started, updated, counts.get("finding", 0),
                       counts.get("decision", 0), loaded)


def get_session(conn: Any, session_id: str) -> SessionView | None:
    row = conn.execute(f"SELECT {_SCOLS} FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    return _view(conn, row) if row else None


def list_sessions(conn: Any, *, project: str | None = None, agent_id: str | None = None,
                  limit: int | None = 50) -> list[SessionView]:
    """Sessions, most recently updated first."""
    sql = f"SELECT {_SCOLS} FROM sessions WHERE 1 = 1"
    params: list[Any] = []
    if project is not None:
        sql += " AND project = ?"
        params.append(project)
    if agent_id is not None:
        sql += " AND agent_id = ?"
        params.append(agent_id)
    sql += " ORDER BY updated_at DESC, position DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(int(limit))
    return [_view(conn, r) for r in conn.execute(sql, params).fetchall()]


def latest_session(conn: Any, agent_id: str, *, project: str | None = None) -> SessionView | None:
    found = list_sessions(conn, project=project, agent_id=agent_id, limit=1)
    return found[0] if found else None


def session_notes(conn: Any, session_id: str, note: str | None = None) -> list[Note]:
    """The session's notes, oldest first (only findings or decisions if ``note``)."""
    sql = "SELECT seq, note, text, ts, path FROM session_notes WHERE session_id = ?"
    params: list[Any] = [session_id]
    if note is not None:
        sql += " AND note = ?"
        params.append(note)
    return [Note(*r) for r in conn.execute(sql + " ORDER BY seq", params).fetchall()]


def get_snapshot(conn: Any, name: str, *, project: str) -> Snapshot | None:
    row = conn.execute("SELECT name, session_id, agent_id, task, step, total, notes, ts FROM session_snapshots"
                       " WHERE project = ? AND name = ?", (project, name)).fetchone()
    if row is None:
        return None
    name_, sid, agent, task, step, total, notes, ts = row
    return Snapshot(name_, sid, agent, task, step, total, _notes_dec.decode(notes), ts)


def list_snapshots(conn: Any, *, project: str) -> list[Snapshot]:
    names = [r[0] for r in conn.execute("SELECT name FROM session_snapshots WHERE project = ? ORDER BY position DESC",
                                        (project,)).fetchall()]
    return [s for s in (get_snapshot(conn, n, project=project) for n in names) if s is not None]


def session_archives(conn: Any, session_id: str) -> list[ArchiveRef]:
    """Archives the session produced, newest first."""
    return [ArchiveRef(*r) for r in conn.execute(
        "SELECT archive_id, source FROM session_archives WHERE session_id = ? ORDER BY position DESC", (session_id,))]


def session_files(conn: Any, session_id: str, *, project: str | None = None) -> list[FileRef]:
    """The session's file refs F1..Fn (``deliveries`` tables) with the content hash last read."""
    rows = conn.execute(
        "SELECT r.ref, r.path, (SELECT l.content_hash FROM delivery_latest l WHERE l.project = r.project"
        " AND l.session = r.session AND l.path = r.path ORDER BY l.position DESC LIMIT 1)"
        " FROM delivery_refs r WHERE r.project = ? AND r.session = ? ORDER BY r.ref",
        (project or "", session_id),
    ).fetchall()
    return [FileRef(f"F{n}", path, h) for n, path, h in rows]


def diary_counts(conn: Any, agent_id: str) -> dict[str, int]:
    """Entries per category in ``agent_id``'s diary (``diaries`` tables)."""
    return dict(Counter(dict(conn.execute(
        "SELECT category, count(*) FROM diary_entries WHERE agent_id = ? GROUP BY category ORDER BY category",
        (agent_id,)).fetchall())))
