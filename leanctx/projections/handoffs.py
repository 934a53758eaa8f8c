"""Handoffs: bundles created here and bundles imported here (``handoff.created`` /
``handoff.imported``, stream ``handoff:<id>``).

- ``handoffs``: handoff id → sender, session, signer key, digest, counts, message (created here).
- ``handoff_imports``: (handoff id, position) → receiver, session, what was applied, ``via`` (how
  the bundle came, as the event says: file, inline, stdin or envelope; ``file`` for events
  recorded before ``via`` existed — the event's default).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..events import StoredEvent
from ..events.kinds.handoff import HandoffCreated, HandoffImported
from .base import Projection

_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder(list[str])


class HandoffRow(msgspec.Struct, frozen=True):
    handoff_id: str
    sender: str
    session_id: str
    key_id: str
    fingerprint: str
    digest: str
    counts: dict[str, int]
    message: str | None
    ts: str
    position: int


class ImportRow(msgspec.Struct, frozen=True):
    handoff_id: str
    sender: str
    receiver: str
    session_id: str
    fingerprint: str
    digest: str
    applied: list[str]
    tasks: list[str]
    knowledge_imported: int
    via: str
    ts: str
    position: int


class Handoffs(Projection):
    name = "handoffs"
    version = 1
    kinds = frozenset({"handoff.created", "handoff.imported"})
    tables = {
        "handoffs": """CREATE TABLE IF NOT EXISTS handoffs (
            handoff_id  TEXT PRIMARY KEY,
            sender      TEXT NOT NULL,
            session_id  TEXT NOT NULL,
            key_id      TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            digest      TEXT NOT NULL,
            counts      TEXT NOT NULL,
            message     TEXT,
            ts          TEXT NOT NULL,
            position    INTEGER NOT NULL
        )""",
        "handoff_imports": """CREATE TABLE IF NOT EXISTS handoff_imports (
            handoff_id  TEXT NOT NULL,
            position    INTEGER NOT NULL,
            sender      TEXT NOT NULL,
            receiver    TEXT NOT NULL,
            session_id  TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            digest      TEXT NOT NULL,
            applied     TEXT NOT NULL,
            tasks       TEXT NOT NULL,
            knowledge_imported INTEGER NOT NULL,
            via         TEXT NOT NULL,
            ts          TEXT NOT NULL,
            PRIMARY KEY (handoff_id, position)
        )""",
    }

    def apply(self, conn: Any, event: StoredEvent) -> None:
        ev = event.data()
        if isinstance(ev, HandoffCreated):
            counts = {"notes": ev.notes, "knowledge": ev.knowledge, "tasks": ev.tasks, "files": ev.files,
                      "diary": ev.diary}
            conn.execute(
                "INSERT INTO handoffs (handoff_id, sender, session_id, key_id, fingerprint, digest, counts, message,"
                " ts, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(handoff_id) DO NOTHING",
                (ev.handoff_id, ev.sender, ev.session_id, ev.key_id, ev.fingerprint, ev.digest,
                 _enc.encode(counts).decode(), ev.message, event.ts, event.position),
            )
        elif isinstance(ev, HandoffImported):
            conn.execute(
                "INSERT INTO handoff_imports (handoff_id, position, sender, receiver, session_id, fingerprint, digest,"
                " applied, tasks, knowledge_imported, via, ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (ev.handoff_id, event.position, ev.sender, ev.receiver, ev.session_id, ev.fingerprint, ev.digest,
                 _enc.encode(list(ev.applied)).decode(), _enc.encode(list(ev.tasks)).decode(),
                 ev.knowledge_imported, ev.via, event.ts),
            )


_cdec = msgspec.json.Decoder(dict[str, int])


def _created(r: tuple[Any, ...]) -> HandoffRow:
    return HandoffRow(r[0], r[1], r[2], r[3], r[4], r[5], _cdec.decode(r[6]), r[7], r[8], r[9])


def _imported(r: tuple[Any, ...]) -> ImportRow:
    return ImportRow(r[0], r[1], r[2], r[3], r[4], r[5], _dec.decode(r[6]), _dec.decode(r[7]), r[8], r[9], r[10],
                     r[11])


_C = "handoff_id, sender, session_id, key_id, fingerprint, digest, counts, message, ts, position"
_I = ("handoff_id, sender, receiver, session_id, fingerprint, digest, applied, tasks, knowledge_imported, via, ts,"
      " position")


def list_created(conn: Any, *, limit: int = 50) -> list[HandoffRow]:
    return [_created(r) for r in conn.execute(f"SELECT {_C} FROM handoffs ORDER BY position DESC LIMIT ?", (limit,))]


def list_imported(conn: Any, *, limit: int = 50) -> list[ImportRow]:
    return [_imported(r) for r in conn.execute(f"SELECT {_I} FROM handoff_imports ORDER BY position DESC LIMIT ?",
                                               (limit,))]


def counts(conn: Any) -> tuple[int, int]:
    """How many handoffs were created and imported in this log (the lists show the newest)."""
    row = conn.execute("SELECT (SELECT COUNT(*) FROM handoffs), (SELECT COUNT(*) FROM handoff_imports)").fetchone()
    return int(row[0]), int(row[1])


def get_created(conn: Any, handoff_id: str) -> HandoffRow | None:
    r = conn.execute(f"SELECT {_C} FROM handoffs WHERE handoff_id = ?", (handoff_id,)).fetchone()
    return _created(r) if r else None


def imports_of(conn: Any, handoff_id: str) -> list[ImportRow]:
    return [_imported(r) for r in conn.execute(f"SELECT {_I} FROM handoff_imports WHERE handoff_id = ?"
                                               " ORDER BY position", (handoff_id,))]
