"""The agent registry: who joined which project, when each was last seen, who left.

``last_seen`` is the agent's last sign of life: its registration, a heartbeat, or any command it
performed itself — every command the bus runs, refused ones included, is recorded as a
``tool.called`` event whose actor is the agent, so an agent that works (posts, reads, claims)
without heartbeating stays alive. It takes the event's timestamp and never moves back (a command
stamped earlier than the last sign leaves it); activity after an agent's departure was recorded
changes nothing (it registers again to rejoin). ``heartbeats`` counts heartbeats only.

Status is computed at query time from ``now`` (never from the projection's own clock):

- ``active``: seen within ``2 × interval`` (at most one heartbeat late);
- ``idle``: seen within ``ttl`` but missed a heartbeat, or self-reported idle;
- ``stale``: no heartbeat and no command for more than ``ttl`` = 3 intervals (60 s by default).
  A stale agent is recorded as gone (``agent.left``, reason ``heartbeat_timeout``) by the first
  command that observes it; it is still listed as ``stale`` afterwards (``timed_out`` true)
  until it registers again or deregisters;
- ``left``: deregistered on purpose (``agent.deregistered``); hidden unless asked for.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from .. import clock
from ..events import StoredEvent
from ..events.kinds.agent import (
    AgentDeregistered,
    AgentHeartbeat,
    AgentLeft,
    AgentRegistered,
)
from ..events.kinds.base import kind_of
from ..events.kinds.tool import ToolCalled
from .base import Projection

_CALLED = kind_of(ToolCalled)  # the bus's record of every command, with its actor

HEARTBEAT_INTERVAL = 20.0  # seconds between heartbeats a client is asked for
HEARTBEAT_TTL = 3 * HEARTBEAT_INTERVAL  # missing 3 intervals makes an agent stale

LEFT_TIMEOUT = "timeout"  # left_kind of an agent recorded by agent.left
LEFT_DEREGISTERED = "deregistered"  # left_kind of an agent that deregistered


class AgentView(msgspec.Struct, frozen=True):
    agent_id: str
    name: str
    agent_type: str
    role: str
    project_root: str
    status: str  # active | idle | stale | left
    registered_at: str
    last_seen: str
    age_seconds: float
    heartbeats: int
    pid: int | None = None
    host: str | None = None
    session_id: str | None = None
    reported_status: str | None = None
    left_at: str | None = None
    left_reason: str | None = None
    timed_out: bool = False  # an agent.left (heartbeat_timeout) was recorded for it


class AgentRegistry(Projection):
    name = "agents"
    version = 3  # 2: folds agent.left (left_kind); 3: an agent's own tool.called moves last_seen
    kinds = frozenset({"agent.registered", "agent.heartbeat", "agent.deregistered", "agent.left", _CALLED})
    tables = {
        "agents": """CREATE TABLE IF NOT EXISTS agents (
            agent_id      TEXT PRIMARY KEY,
            name          TEXT NOT NULL,
            agent_type    TEXT NOT NULL,
            role          TEXT NOT NULL,
            project_root  TEXT NOT NULL,
            pid           INTEGER,
            host          TEXT,
            session_id    TEXT,
            registered_at TEXT NOT NULL,
            last_seen     TEXT NOT NULL,
            reported_status TEXT,
            heartbeats    INTEGER NOT NULL,
            left_at       TEXT,
            left_reason   TEXT,
            left_kind     TEXT
        )""",
    }
    indexes = ("CREATE INDEX IF NOT EXISTS agents_project ON agents (project_root, agent_type, role)",)

    def apply(self, conn: Any, event: StoredEvent) -> None:
        if event.kind == _CALLED:  # the envelope says all: the payload is not decoded
            if event.actor is not None:
                conn.execute("UPDATE agents SET last_seen = ? WHERE agent_id = ? AND left_at IS NULL"
                             " AND last_seen < ?", (event.ts, event.actor, event.ts))
            return
        ev = event.data()
        if isinstance(ev, AgentRegistered):
            conn.execute(
                "INSERT INTO agents (agent_id, name, agent_type, role, project_root, pid, host, session_id,"
                " registered_at, last_seen, reported_status, heartbeats, left_at, left_reason, left_kind)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, 0, NULL, NULL, NULL)"
                " ON CONFLICT(agent_id) DO UPDATE SET name = excluded.name, agent_type = excluded.agent_type,"
                " role = excluded.role, project_root = excluded.project_root, pid = excluded.pid,"
                " host = excluded.host, session_id = excluded.session_id, registered_at = excluded.registered_at,"
                " last_seen = excluded.last_seen, reported_status = NULL, left_at = NULL, left_reason = NULL,"
                " left_kind = NULL",
                (ev.agent_id, ev.name, ev.agent_type, ev.role, ev.project_root, ev.pid, ev.host, ev.session_id,
                 event.ts, event.ts),
            )
        elif isinstance(ev, AgentHeartbeat):
            conn.execute(
                "UPDATE agents SET last_seen = ?, heartbeats = heartbeats + 1,"
                " reported_status = coalesce(?, reported_status) WHERE agent_id = ?",
                (event.ts, ev.status, ev.agent_id),
            )
        elif isinstance(ev, AgentDeregistered):
            conn.execute(
                "UPDATE agents SET left_at = ?, left_reason = ?, left_kind = ? WHERE agent_id = ?",
                (event.ts, ev.reason, LEFT_DEREGISTERED, ev.agent_id),
            )
        elif isinstance(ev, AgentLeft):
            conn.execute(
                "UPDATE agents SET left_at = ?, left_reason = ?, left_kind = ? WHERE agent_id = ?",
                (event.ts, ev.reason, LEFT_TIMEOUT, ev.agent_id),
            )


_COLS = (
    "agent_id, name, agent_type, role, project_root, pid, host, session_id, registered_at, last_seen,"
    " reported_status, heartbeats, left_at, left_reason, left_kind"
)


def status_of(last_seen: str, left_at: str | None, reported: str | None, now: float,
              ttl: float = HEARTBEAT_TTL, left_kind: str | None = None) -> tuple[str, float]:
    age = max(0.0, now - clock.parse(last_seen))
    if left_at is not None:
        return ("stale" if left_kind == LEFT_TIMEOUT else "left"), age
    if age > ttl:
        return "stale", age
    if age > 2 * ttl / 3 or reported == "idle":
        return "idle", age
    return "active", age


def _view(row: tuple[Any, ...], now: float, ttl: float) -> AgentView:
    (agent_id, name, agent_type, role, project_root, pid, host, session_id, registered_at, last_seen,
     reported, heartbeats, left_at, left_reason, left_kind) = row
    status, age = status_of(last_seen, left_at, reported, now, ttl, left_kind)
    return AgentView(agent_id, name, agent_type, role, project_root, status, registered_at, last_seen,
                     round(age, 3), heartbeats, pid, host, session_id, reported, left_at, left_reason,
                     left_kind == LEFT_TIMEOUT)


def status_counts(views: Iterable[AgentView]) -> dict[str, int]:
    """Agents by status (active, idle and stale always present, left when listed) and ``total``."""
    counts = {"active": 0, "idle": 0, "stale": 0}
    total = 0
    for a in views:
        counts[a.status] = counts.get(a.status, 0) + 1
        total += 1
    counts["total"] = total
    return counts


def list_agents(conn: Any, *, now: float, project_root: str | None = None, include_left: bool = False,
                ttl: float = HEARTBEAT_TTL) -> list[AgentView]:
    """Agents (of ``project_root`` if given) with their status at ``now``. Agents that
    deregistered are left out unless ``include_left``; timed-out agents are listed as stale."""
    sql = f"SELECT {_COLS} FROM agents"
    params: list[Any] = []
    where = []
    if project_root is not None:
        where.append("project_root = ?")
        params.append(project_root)
    if not include_left:
        where.append("(left_at IS NULL OR left_kind = ?)")
        params.append(LEFT_TIMEOUT)
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY registered_at, agent_id"
    return [_view(r, now, ttl) for r in conn.execute(sql, params)]


def unrecorded_stale(conn: Any, *, now: float, project_root: str | None = None,
                     ttl: float = HEARTBEAT_TTL) -> list[AgentView]:
    """Agents stale at ``now`` whose timeout has not been recorded yet (no ``agent.left``)."""
    sql = f"SELECT {_COLS} FROM agents WHERE left_at IS NULL"
    params: list[Any] = []
    if project_root is not None:
        sql += " AND project_root = ?"
        params.append(project_root)
    rows = conn.execute(sql + " ORDER BY registered_at, agent_id", params)
    return [v for v in (_view(r, now, ttl) for r in rows) if v.status == "stale"]


def find_agent(conn: Any, ref: str, *, now: float, project_root: str | None = None,
               ttl: float = HEARTBEAT_TTL) -> AgentView | None:
    """By agent_id, else by name (the newest registration of that name, in ``project_root`` if given)."""
    row = conn.execute(f"SELECT {_COLS} FROM agents WHERE agent_id = ?", (ref,)).fetchone()
    if row is None:
        sql = f"SELECT {_COLS} FROM agents WHERE name = ?"
        params: list[Any] = [ref]
        if project_root is not None:
            sql += " AND project_root = ?"
            params.append(project_root)
        row = conn.execute(sql + " ORDER BY registered_at DESC LIMIT 1", params).fetchone()
    return _view(row, now, ttl) if row else None


def count_names(conn: Any, project_root: str, agent_type: str, role: str) -> int:
    """How many agents of this type and role were ever registered in the project."""
    return conn.execute(
        "SELECT count(*) FROM agents WHERE project_root = ? AND agent_type = ? AND role = ?",
        (project_root, agent_type, role),
    ).fetchone()[0]


def name_taken(conn: Any, project_root: str, name: str, *, agent_id: str | None = None) -> bool:
    """Whether ``name`` is not free for ``agent_id``'s new name: an agent of the project already
    has it, or it is the id of another agent (any project: ids win over names in ``find_agent``,
    so that agent would receive what is addressed to the new name)."""
    return conn.execute(
        "SELECT 1 FROM agents WHERE (project_root = ? AND name = ?) OR (agent_id = ? AND agent_id IS NOT ?) LIMIT 1",
        (project_root, name, name, agent_id),
    ).fetchone() is not None


def named(conn: Any, name: str, *, now: float, exclude: str | None = None,
          ttl: float = HEARTBEAT_TTL) -> AgentView | None:
    """The newest agent other than ``exclude`` registered under ``name``, in any project and
    whatever its status (a name is never given again, and its holder may rejoin)."""
    row = conn.execute(f"SELECT {_COLS} FROM agents WHERE name = ? AND agent_id IS NOT ?"
                       " ORDER BY registered_at DESC LIMIT 1", (name, exclude)).fetchone()
    return _view(row, now, ttl) if row else None
