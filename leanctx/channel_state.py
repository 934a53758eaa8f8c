"""Channel roster and state: one deterministic summary composed from the projections.

``roster``: the channel's members with their live status (registry status from heartbeats,
the adapter status they reported). ``state``: open tasks by state with owners and lease
expiry, active path locks of the workspace, active scent claims, and the last messages.

Both are evaluated at a time ``at``; by default the timestamp of the log's last event, so the
same log gives byte-identical output (``--at now`` evaluates at the wall clock instead).
Directed messages never appear: the summary shows broadcasts only.

A channel that only tasks name (a task may name any channel; none was created with ``chat
init``) has a state too: its tasks, as an open channel's members, no messages, and
``tasks_only`` set (the text says how to create it). A name with neither is
``CHAT_CHANNEL_NOT_FOUND``.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from . import clock
from .errors import InvalidInput
from .projections.agents import find_agent, list_agents
from .projections.channels import adapter_states, channel_info, last_messages
from .projections.locks import active_locks
from .projections.scent import sync
from .projections.tasks import count_tasks, list_tasks


class Member(msgspec.Struct, frozen=True):
    agent: str
    name: str | None  # registered name (cursor-dev-1), None when never registered
    status: str  # active | idle | stale | left | unregistered
    last_seen: str | None
    reported_status: str | None  # from heartbeats or adapter status events
    harness: str | None


class TaskLine(msgspec.Struct, frozen=True):
    task_id: str
    title: str
    status: str
    owner: str | None
    to_agent: str | None
    lease_expires_at: str | None
    lease_state: str
    waiting_on: list[str]
    blocked_reason: str | None


class LockLine(msgspec.Struct, frozen=True):
    path: str
    owner: str
    expires_at: str


class ClaimLine(msgspec.Struct, frozen=True):
    target: str
    agent: str
    name: str
    deposited_at: str


class MessageLine(msgspec.Struct, frozen=True):
    seq: int
    sender: str
    to: str
    category: str
    title: str
    ts: str


class ChannelState(msgspec.Struct, frozen=True):
    channel: str
    topic: str | None
    at: str
    position: int
    members: list[Member]
    tasks: dict[str, list[TaskLine]]
    done: int
    cancelled: int
    locks: list[LockLine]
    claims: list[ClaimLine]
    messages: list[MessageLine]
    tasks_only: bool = False  # no channel was created: only tasks name it


def evaluation_time(store: Any, at: str | None) -> tuple[float, int]:
    """(epoch seconds, head position) for ``at``: ``None``/``"head"`` → the last event's ts,
    ``"now"`` → the wall clock, else an ISO timestamp."""
    head = store.head().position
    if at in (None, "head"):
        last = store.get(head) if head else None
        return (clock.parse(last.ts) if last else 0.0), head
    if at == "now":
        return clock.now(), head
    from datetime import datetime

    try:
        return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp(), head
    except ValueError:
        raise InvalidInput("CHAT_STATE_INVALID_AT", f"at={at!r} is not a time: give head, now or an ISO timestamp "
                           "(2026-12-01T08:00:00Z)") from None


def _tasks_only(conn: Any, channel: str) -> bool:
    """Whether only tasks name ``channel`` (else it exists); ``CHAT_CHANNEL_NOT_FOUND`` for neither."""
    if channel_info(conn, channel) is not None:
        return False
    if count_tasks(conn, channel):
        return True
    from .commands.chat import channel_not_found

    raise channel_not_found(conn, channel)


def roster(conn: Any, channel: str, *, now: float, project: str | None = None) -> list[Member]:
    info = channel_info(conn, channel)
    if info is None:
        _tasks_only(conn, channel)  # refused unless tasks name it: then an open channel
    ids: list[str] = []
    for m in info.members if info is not None else []:
        a = find_agent(conn, m, now=now)
        ids.append(a.agent_id if a is not None else m)
    if not ids:  # an open channel: every agent registered in the project
        ids = [a.agent_id for a in list_agents(conn, now=now, project_root=project)]
    adapters = {s.agent: s for s in adapter_states(conn, sorted(set(ids)))}
    out = []
    for agent in sorted(set(ids)):
        a = find_agent(conn, agent, now=now)
        s = adapters.get(agent)
        reported = (s.status if s and s.status else None) or (a.reported_status if a else None)
        out.append(
            Member(agent, a.name if a else None, a.status if a else "unregistered", a.last_seen if a else None,
                   reported, s.harness if s else None)
        )
    return out


def channel_state(conn: Any, channel: str, *, now: float, position: int, project: str | None = None,
                  messages: int = 5) -> ChannelState:
    tasks_only = _tasks_only(conn, channel)
    members = roster(conn, channel, now=now, project=project)
    info = channel_info(conn, channel)
    tasks: dict[str, list[TaskLine]] = {s: [] for s in ("open", "in_progress", "blocked")}
    done = cancelled = 0
    for t in list_tasks(conn, now=now, channel=channel):
        if t.status == "done":
            done += 1
        elif t.status == "cancelled":
            cancelled += 1
        else:
            tasks[t.status].append(
                TaskLine(t.task_id, t.title, t.status, t.owner, t.to_agent, t.lease_expires_at, t.lease_state,
                         list(t.waiting_on), t.blocked_reason)
            )
    workspace = os.path.realpath(project) if project else None
    locks = [LockLine(lk.display, lk.owner, lk.expires_at) for lk in active_locks(conn, now=now, workspace=workspace)]
    claims = [
        ClaimLine(v.target, v.agent, v.name, v.deposited_at)
        for v in sync(conn, now=now, project=project, kinds=("CLAIMED",))
        if v.active
    ]
    msgs = [
        MessageLine(m.seq, m.sender, m.to, m.category, m.title, m.ts)
        for m in last_messages(conn, channel, messages)
    ]
    return ChannelState(channel, info.topic if info else None, clock.iso(now), position, members, tasks, done,
                        cancelled, locks, sorted(claims, key=lambda c: (c.target, c.agent)), msgs, tasks_only)


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def render_state(st: ChannelState) -> str:
    """Plain text, stable for a given ``ChannelState`` (no wall-clock values)."""
    out = [f"# {st.channel} — state at {st.at} (log position {st.position})"]
    if st.topic:
        out.append(f"topic: {_one_line(st.topic)}")
    if st.tasks_only:
        out.append(f"tasks only: no channel {st.channel!r} was created, so nobody can post in it; create it with"
                   f" ctx_agent action=init channel={st.channel} (or `lean-ctx chat init {st.channel}`)")
    out.append("")
    out.append(f"## members ({len(st.members)})")
    for m in st.members:
        extra = f", reports {m.reported_status}" if m.reported_status else ""
        out.append(f"- {m.name or m.agent} ({m.agent}): {m.status}{extra}")
    if not st.members:
        out.append("- (none)")
    out.append("")
    open_count = sum(len(v) for v in st.tasks.values())
    out.append(f"## tasks ({open_count} not finished; {st.done} done, {st.cancelled} cancelled)")
    for status in ("in_progress", "blocked", "open"):
        for t in st.tasks.get(status, []):
            line = f"- [{status}] {t.task_id}: {_one_line(t.title)}"
            if t.owner:
                line += f" — owner {t.owner}"
            if t.to_agent:
                line += f" — delegated to {t.to_agent}"
            if t.lease_expires_at:
                line += f" — lease {t.lease_state}, expires {t.lease_expires_at}"
            if t.waiting_on:
                line += f" — waiting on {', '.join(t.waiting_on)}"
            if t.blocked_reason:
                line += f" — blocked: {_one_line(t.blocked_reason)}"
            out.append(line)
    out.append("")
    out.append(f"## path locks ({len(st.locks)})")
    out.extend(f"- {lk.path} — {lk.owner}, expires {lk.expires_at}" for lk in st.locks)
    out.append("")
    out.append(f"## claims ({len(st.claims)})")
    out.extend(f"- {c.target} — claimed by {c.name}, since {c.deposited_at}" for c in st.claims)
    out.append("")
    out.append(f"## last messages ({len(st.messages)})")
    out.extend(
        f"- #{m.seq} {m.sender} → {m.to} [{m.category}] {_one_line(m.title)} ({m.ts})" for m in st.messages
    )
    return "\n".join(out) + "\n"
