"""Tasks: per-channel tasks with their state, owner, dependencies and lease.

A lease exists only while a task is ``in_progress`` (claim, renew, recover and a handover of
an in-progress task set it; every move out of ``in_progress`` ends it). Its state is computed at query time from ``now``:
``none``, ``active`` (``now`` before ``lease_expires_at``) or ``expired``.

Query functions (``get_task``, ``list_tasks``, ``dependency_reaches``, ...) take the
connection they read and return deterministic results (ordered by channel, then creation
position in the log, then id), so other families (the channel ``state`` summary) can call
them directly.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import msgspec

from .. import clock
from ..events import StoredEvent
from ..events.kinds import Event
from ..events.kinds.task import (
    TaskBlocked,
    TaskClaimed,
    TaskCompleted,
    TaskCreated,
    TaskHandedOver,
    TaskRecovered,
    TaskReleased,
    TaskRenewed,
    TaskStatusChanged,
    TaskUpdated,
)
from .base import Projection

STATUSES = ("open", "in_progress", "blocked", "done", "cancelled")
TERMINAL = frozenset({"done", "cancelled"})
TRANSITIONS: dict[str, frozenset[str]] = {
    "open": frozenset({"in_progress", "blocked", "cancelled"}),
    "in_progress": frozenset({"open", "blocked", "done", "cancelled"}),
    "blocked": frozenset({"open", "in_progress", "cancelled"}),
    "done": frozenset(),
    "cancelled": frozenset(),
}


class TaskView(msgspec.Struct, frozen=True):
    channel: str
    task_id: str
    title: str
    status: str  # open | in_progress | blocked | done | cancelled
    owner: str | None
    to_agent: str | None
    created_by: str | None
    depends_on: list[str]
    waiting_on: list[str]  # dependencies not done yet (empty: the task may start and finish)
    files_hint: list[str]
    acceptance: str | None
    branch: str | None
    blocked_reason: str | None
    lease_state: str  # none | active | expired
    lease_expires_at: str | None
    lease_seconds: float | None
    lease_remaining_seconds: float | None  # 0 when expired, None without a lease
    claimed_at: str | None
    created_at: str
    updated_at: str
    completed_at: str | None
    previous_owner: str | None
    previous_lease_expires_at: str | None
    recovery_reason: str | None
    recovered_at: str | None
    version: int  # events applied to this task (its stream version)
    # the last takeover is a recovery (recovery_*) or a handover (these), with previous_owner/_lease
    handoff_id: str | None = None  # the handoff that handed the task to its owner
    handed_over_at: str | None = None
    owner_since: str | None = None  # when the current owner became the owner (None without one)


class Tasks(Projection):
    name = "tasks"
    version = 3  # 2: task.handed_over (handoff_id, handed_over_at); 3: owner_since
    kinds = frozenset({
        "task.created", "task.updated", "task.status_changed", "task.claimed", "task.renewed",
        "task.released", "task.completed", "task.blocked", "task.recovered", "task.handed_over",
    })
    tables = {
        "tasks": """CREATE TABLE IF NOT EXISTS tasks (
            channel          TEXT NOT NULL,
            task_id          TEXT NOT NULL,
            title            TEXT NOT NULL,
            status           TEXT NOT NULL,
            owner            TEXT,
            to_agent         TEXT,
            created_by       TEXT,
            files_hint       TEXT NOT NULL,
            acceptance       TEXT,
            branch           TEXT,
            blocked_reason   TEXT,
            lease_expires_at TEXT,
            lease_seconds    REAL,
            claimed_at       TEXT,
            created_at       TEXT NOT NULL,
            created_pos      INTEGER NOT NULL,
            updated_at       TEXT NOT NULL,
            completed_at     TEXT,
            previous_owner   TEXT,
            previous_lease_expires_at TEXT,
            recovery_reason  TEXT,
            recovered_at     TEXT,
            version          INTEGER NOT NULL,
            handoff_id       TEXT,
            handed_over_at   TEXT,
            owner_since      TEXT,
            PRIMARY KEY (channel, task_id)
        )""",
        "task_deps": """CREATE TABLE IF NOT EXISTS task_deps (
            channel    TEXT NOT NULL,
            task_id    TEXT NOT NULL,
            depends_on TEXT NOT NULL,
            PRIMARY KEY (channel, task_id, depends_on)
        )""",
    }
    indexes = (
        "CREATE INDEX IF NOT EXISTS tasks_order ON tasks (channel, created_pos)",
        "CREATE INDEX IF NOT EXISTS tasks_status ON tasks (status, channel)",
        "CREATE INDEX IF NOT EXISTS task_deps_rev ON task_deps (channel, depends_on)",
    )

    def apply(self, conn: Any, event: StoredEvent) -> None:
        ev = event.data()
        before = get_row(conn, ev.channel, ev.task_id)  # type: ignore[attr-defined]
        after = fold(before, ev, ts=event.ts, position=event.position, actor=event.actor)
        if after is None:
            return
        stored = {**after, "files_hint": json.dumps(after["files_hint"])}
        del stored["depends_on"]
        conn.execute(
            f"INSERT OR REPLACE INTO tasks ({', '.join(_FIELDS)}) VALUES ({', '.join('?' * len(_FIELDS))})",
            [stored[f] for f in _FIELDS],
        )
        if before is None or before["depends_on"] != after["depends_on"]:
            key = (after["channel"], after["task_id"])
            conn.execute("DELETE FROM task_deps WHERE channel = ? AND task_id = ?", key)
            conn.executemany("INSERT INTO task_deps (channel, task_id, depends_on) VALUES (?, ?, ?)",
                             [(*key, d) for d in after["depends_on"]])


_FIELDS = (
    "channel", "task_id", "title", "status", "owner", "to_agent", "created_by", "files_hint", "acceptance", "branch",
    "blocked_reason", "lease_expires_at", "lease_seconds", "claimed_at", "created_at", "created_pos", "updated_at",
    "completed_at", "previous_owner", "previous_lease_expires_at", "recovery_reason", "recovered_at", "version",
    "handoff_id", "handed_over_at", "owner_since",
)
_NO_LEASE = {"lease_expires_at": None, "lease_seconds": None}


def fold(row: dict[str, Any] | None, ev: Event, *, ts: str, position: int = 0,
         actor: str | None = None) -> dict[str, Any] | None:
    """The task row after ``ev`` (a pure function: the projection folds with it, and commands use
    it to return the state their events lead to). ``row`` is a ``get_row`` mapping."""
    if isinstance(ev, TaskCreated):
        return {
            "channel": ev.channel, "task_id": ev.task_id, "title": ev.title, "status": "open", "owner": ev.owner,
            "to_agent": ev.to_agent, "created_by": actor, "files_hint": list(ev.files_hint),
            "acceptance": ev.acceptance, "branch": ev.branch, "blocked_reason": None, **_NO_LEASE,
            "claimed_at": None, "created_at": ts, "created_pos": position, "updated_at": ts, "completed_at": None,
            "previous_owner": None, "previous_lease_expires_at": None, "recovery_reason": None,
            "recovered_at": None, "version": 1, "handoff_id": None, "handed_over_at": None,
            "owner_since": ts if ev.owner is not None else None,
            "depends_on": sorted(set(ev.depends_on)),
        }
    if row is None:  # an event for a task the log never created: nothing to fold into
        return None
    r = {**row, "updated_at": ts, "version": row["version"] + 1}
    if isinstance(ev, TaskUpdated):
        if ev.title is not None:
            r["title"] = ev.title
        if ev.owner_cleared:
            r["owner"] = None
        elif ev.owner is not None:
            r["owner"] = ev.owner
        if ev.depends_on is not None:
            r["depends_on"] = sorted(set(ev.depends_on))
        if ev.files_hint is not None:
            r["files_hint"] = list(ev.files_hint)
        if ev.acceptance_cleared:
            r["acceptance"] = None
        elif ev.acceptance is not None:
            r["acceptance"] = ev.acceptance
        if ev.branch_cleared:
            r["branch"] = None
        elif ev.branch is not None:
            r["branch"] = ev.branch
    elif isinstance(ev, TaskStatusChanged):
        r["status"] = ev.to_status
        r["blocked_reason"] = ev.reason if ev.to_status == "blocked" else None
        if ev.to_status != "in_progress":
            r.update(_NO_LEASE)
        if ev.to_status == "done":
            r["completed_at"] = ts
    elif isinstance(ev, TaskClaimed):
        r.update(status="in_progress", owner=ev.owner, lease_expires_at=ev.lease_expires_at,
                 lease_seconds=ev.lease_seconds, claimed_at=ts, blocked_reason=None)
    elif isinstance(ev, TaskRenewed):
        r.update(lease_expires_at=ev.lease_expires_at, lease_seconds=ev.lease_seconds)
    elif isinstance(ev, TaskReleased):
        r.update(status="open", owner=None, **_NO_LEASE)
    elif isinstance(ev, TaskCompleted):
        r.update(status="done", owner=ev.owner, completed_at=ts, **_NO_LEASE)
    elif isinstance(ev, TaskBlocked):
        r.update(status="blocked", blocked_reason=ev.reason, **_NO_LEASE)
    elif isinstance(ev, TaskRecovered):
        r.update(status="in_progress", owner=ev.owner, lease_expires_at=ev.lease_expires_at,
                 lease_seconds=ev.lease_seconds, claimed_at=ts, previous_owner=ev.previous_owner,
                 previous_lease_expires_at=ev.previous_lease_expires_at, recovery_reason=ev.recovery_reason,
                 recovered_at=ts, blocked_reason=None, handoff_id=None, handed_over_at=None)
    elif isinstance(ev, TaskHandedOver):
        r.update(owner=ev.owner, previous_owner=ev.previous_owner,
                 previous_lease_expires_at=ev.previous_lease_expires_at, handoff_id=ev.handoff_id,
                 handed_over_at=ts, recovery_reason=None, recovered_at=None)
        if ev.lease_expires_at is not None:
            r.update(lease_expires_at=ev.lease_expires_at, lease_seconds=ev.lease_seconds, claimed_at=ts)
        else:
            r.update(_NO_LEASE)
    if r["owner"] != row["owner"]:
        r["owner_since"] = ts if r["owner"] is not None else None
    return r


# --- queries ------------------------------------------------------------------------

def lease_state(lease_expires_at: str | None, now: float) -> tuple[str, float | None]:
    """(``none`` | ``active`` | ``expired``, seconds left) of a lease at ``now``; a lease is
    expired from its expiry instant on."""
    if lease_expires_at is None:
        return "none", None
    left = clock.parse(lease_expires_at) - now
    return ("active", round(left, 3)) if left > 0 else ("expired", 0.0)


def _deps_of(conn: Any, channel: str, task_id: str) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT depends_on FROM task_deps WHERE channel = ? AND task_id = ? ORDER BY depends_on", (channel, task_id)
    )]


def get_row(conn: Any, channel: str, task_id: str) -> dict[str, Any] | None:
    """The raw row of a task (``files_hint`` decoded, ``depends_on`` added), or None."""
    row = conn.execute(f"SELECT {', '.join(_FIELDS)} FROM tasks WHERE channel = ? AND task_id = ?",
                       (channel, task_id)).fetchone()
    if row is None:
        return None
    out = dict(zip(_FIELDS, row))
    out["files_hint"] = json.loads(out["files_hint"])
    out["depends_on"] = _deps_of(conn, channel, task_id)
    return out


def statuses(conn: Any, channel: str, task_ids: Iterable[str]) -> dict[str, str]:
    """task_id → status for those of ``task_ids`` that exist in ``channel``."""
    ids = sorted(set(task_ids))
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT task_id, status FROM tasks WHERE channel = ? AND task_id IN ({','.join('?' * len(ids))})",
        (channel, *ids),
    )
    return {r[0]: r[1] for r in rows}


def view_of(conn: Any, row: dict[str, Any], now: float) -> TaskView:
    """The view of a ``get_row`` mapping at ``now`` (dependency states read from ``conn``)."""
    state, left = lease_state(row["lease_expires_at"], now)
    done = statuses(conn, row["channel"], row["depends_on"])
    waiting = [d for d in row["depends_on"] if done.get(d) != "done"]
    return TaskView(
        row["channel"], row["task_id"], row["title"], row["status"], row["owner"], row["to_agent"],
        row["created_by"], list(row["depends_on"]), waiting, list(row["files_hint"]), row["acceptance"],
        row["branch"], row["blocked_reason"], state, row["lease_expires_at"], row["lease_seconds"], left,
        row["claimed_at"], row["created_at"], row["updated_at"], row["completed_at"], row["previous_owner"],
        row["previous_lease_expires_at"], row["recovery_reason"], row["recovered_at"], row["version"],
        row["handoff_id"], row["handed_over_at"], row["owner_since"],
    )


def get_task(conn: Any, channel: str, task_id: str, *, now: float) -> TaskView | None:
    row = get_row(conn, channel, task_id)
    return view_of(conn, row, now) if row else None


def list_tasks(
    conn: Any,
    *,
    now: float,
    channel: str | None = None,
    status: str | Iterable[str] | None = None,
    owner: str | None = None,
    to_agent: str | None = None,
    assigned_to: str | None = None,
    lease: str | None = None,
) -> list[TaskView]:
    """Tasks ordered by channel, then creation order, then id.

    ``status``: one state or several; ``owner`` / ``to_agent``: exact; ``assigned_to``: owner
    or delegate is this agent; ``lease``: ``none`` | ``active`` | ``expired`` at ``now``.
    """
    where: list[str] = []
    params: list[Any] = []
    if channel is not None:
        where.append("channel = ?")
        params.append(channel)
    if status is not None:
        wanted = [status] if isinstance(status, str) else sorted(set(status))
        where.append(f"status IN ({','.join('?' * len(wanted))})")
        params.extend(wanted)
    if owner is not None:
        where.append("owner = ?")
        params.append(owner)
    if to_agent is not None:
        where.append("to_agent = ?")
        params.append(to_agent)
    if assigned_to is not None:
        where.append("(owner = ? OR to_agent = ?)")
        params.extend([assigned_to, assigned_to])
    sql = "SELECT channel, task_id FROM tasks"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY channel, created_pos, task_id"
    views = []
    for channel_, task_id in conn.execute(sql, params).fetchall():
        row = get_row(conn, channel_, task_id)
        assert row is not None
        views.append(view_of(conn, row, now))
    if lease is not None:
        views = [v for v in views if v.lease_state == lease]
    return views


def task_ids(conn: Any, channel: str) -> set[str]:
    return {r[0] for r in conn.execute("SELECT task_id FROM tasks WHERE channel = ?", (channel,))}


def count_tasks(conn: Any, channel: str) -> int:
    return conn.execute("SELECT count(*) FROM tasks WHERE channel = ?", (channel,)).fetchone()[0]


def dependency_reaches(conn: Any, channel: str, start: Iterable[str], target: str) -> list[str] | None:
    """A dependency path from one of ``start`` to ``target`` (following ``depends_on`` edges of
    ``channel``), or None: adding ``target → start`` would then close that cycle."""
    parent: dict[str, str | None] = {}
    frontier = []
    for s in sorted(set(start)):
        if s not in parent:
            parent[s] = None
            frontier.append(s)
    while frontier:
        node = frontier.pop(0)
        if node == target:
            path = [node]
            while parent[path[-1]] is not None:
                path.append(parent[path[-1]])  # type: ignore[arg-type]
            return path[::-1]
        for (nxt,) in conn.execute(
            "SELECT depends_on FROM task_deps WHERE channel = ? AND task_id = ? ORDER BY depends_on", (channel, node)
        ):
            if nxt not in parent:
                parent[nxt] = node
                frontier.append(nxt)
    return None
