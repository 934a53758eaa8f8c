"""``ctx_task``: tasks with leases in a channel (the task commands' wrappers), one ``action`` per
verb. Refusals keep their codes: ``LEASE_CONFLICT``, ``LEASE_OWNER_MISMATCH``,
``LEASE_EXPIRED_RECOVER_REQUIRED``, ``TASK_INVALID_TRANSITION``, ..."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ... import clock
from ...errors import CommandError, InvalidInput
from ..registry import Caller, tool

Action = Literal["create", "list", "show", "update", "claim", "renew", "done", "block", "release", "recover"]
DEFAULT_CHANNEL = "general"


class TaskArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    action: Action
    task_id: str | None = None
    channel: str | None = None
    title: str | None = None
    to: str | None = None
    owner: str | None = None
    depends_on: list[str] | None = None
    files: list[str] | None = None
    acceptance: str | None = None
    status: str | None = None
    reason: str | None = None
    lease_seconds: float | None = None
    mine: bool = False


def _line(t: Any) -> str:
    lease = ""
    if t.lease_state == "active":
        lease = f", lease {t.lease_remaining_seconds:.0f}s left"
    elif t.lease_state == "expired":
        lease = ", lease expired"
    who = f", owner {t.owner}" if t.owner else ""
    to = f", to {t.to_agent}" if t.to_agent else ""
    waits = f", waiting on {','.join(t.waiting_on)}" if t.waiting_on else ""
    blocked = f" ({t.blocked_reason})" if t.blocked_reason else ""
    return f"{t.task_id} [{t.status}{blocked}] {t.title}{who}{to}{lease}{waits}"


def _id(a: TaskArgs) -> str:
    if not a.task_id:
        raise InvalidInput("INVALID_ARGUMENT", f"ctx_task {a.action} needs task_id")
    return a.task_id


def _result(lc: Any, caller: Caller, command: Any) -> dict[str, Any]:
    r = lc.bus.dispatch(command, actor=caller.agent_id, session_id=caller.session_id, project=caller.project).value
    head = "unchanged: " if r.unchanged else ""
    tail = f", recovered from {r.task.previous_owner}" if "task.recovered" in r.events and r.task.previous_owner else ""
    return {"text": head + _line(r.task) + tail, "task": r.task, "events": r.events, "unchanged": r.unchanged}


@tool("ctx_task", category="session", args=TaskArgs, description="""
Tasks with leases, shared by agents. action: create(title, to?, depends_on?, files?, acceptance?) |
list(status?, mine?, owner?) | show | update(title?, owner?, status?, reason?) | claim(lease_seconds?) | renew |
done | block(reason) | release | recover(reason, owner?). Actions on one task need task_id; channel defaults to
general. to/owner: an agent's id or name (ctx_agent action=list). Only claim starts a task (status in_progress).""")
def ctx_task(lc: Any, caller: Caller, a: TaskArgs) -> dict[str, Any]:
    from ...commands import tasks as tc

    channel = a.channel or DEFAULT_CHANNEL
    lease = a.lease_seconds if a.lease_seconds is not None else tc.DEFAULT_LEASE_SECONDS
    if a.action == "list":
        from ...projections.agents import find_agent
        from ...projections.tasks import STATUSES, list_tasks

        statuses = [s.strip() for s in (a.status or "").split(",") if s.strip()] or None
        bad = [s for s in statuses or [] if s not in STATUSES]
        if bad:
            raise InvalidInput("TASK_INVALID_ARGUMENT", f"unknown status {', '.join(bad)}: use {', '.join(STATUSES)}")
        owner = a.owner.strip() if a.owner else None
        if owner:  # a name resolves to its id as for create/update; an unregistered owner is kept (CLI identities)
            agent = find_agent(lc.projections.reader("agents"), owner, now=clock.now(), project_root=caller.project)
            owner = agent.agent_id if agent is not None else owner
        rows = list_tasks(lc.projections.reader("tasks"), now=clock.now(), channel=channel, status=statuses,
                          owner=owner, assigned_to=caller.agent_id if a.mine else None)
        return {"text": "\n".join(_line(t) for t in rows) or f"no tasks in {channel}", "tasks": rows}
    if a.action == "show":
        from ...projections.tasks import get_task

        t = get_task(lc.projections.reader("tasks"), channel, _id(a), now=clock.now())
        if t is None:
            raise CommandError("TASK_NOT_FOUND", f"no task {a.task_id!r} in channel {channel!r}; see ctx_task list")
        extra = [f"  {k}: {', '.join(v) if isinstance(v, list) else v}" for k, v in (
            ("created_by", t.created_by), ("depends_on", t.depends_on), ("files", t.files_hint),
            ("acceptance", t.acceptance), ("branch", t.branch), ("previous_owner", t.previous_owner),
            ("recovery", t.recovery_reason), ("handoff", t.handoff_id)) if v]
        return {"text": "\n".join([_line(t), *extra]), "task": t}
    if a.action == "create":
        if not a.title:
            raise InvalidInput("INVALID_ARGUMENT", "ctx_task create needs title")
        cmd: Any = tc.CreateTask(title=a.title, task_id=a.task_id, channel=channel, owner=a.owner, to_agent=a.to,
                                 depends_on=a.depends_on or [], files_hint=a.files or [], acceptance=a.acceptance)
    elif a.action == "update":
        if a.to is not None:
            raise InvalidInput("INVALID_ARGUMENT", "ctx_task update cannot change the delegate: `to` is fixed when "
                               "the task is created; give the task to an agent with owner=... instead")
        cmd = tc.UpdateTask(task_id=_id(a), channel=channel, title=a.title, owner=a.owner, depends_on=a.depends_on,
                            files_hint=a.files, acceptance=a.acceptance, status=a.status, reason=a.reason)
    elif a.action == "claim":
        cmd = tc.ClaimTask(task_id=_id(a), channel=channel, lease_seconds=lease)
    elif a.action == "renew":
        cmd = tc.RenewTask(task_id=_id(a), channel=channel, lease_seconds=lease)
    elif a.action == "done":
        cmd = tc.CompleteTask(task_id=_id(a), channel=channel)
    elif a.action == "block":
        if not a.reason:
            raise InvalidInput("INVALID_ARGUMENT", "ctx_task block needs reason")
        cmd = tc.BlockTask(task_id=_id(a), reason=a.reason, channel=channel)
    elif a.action == "release":
        cmd = tc.ReleaseTask(task_id=_id(a), channel=channel, reason=a.reason)
    else:  # recover
        if not a.reason:
            raise InvalidInput("INVALID_ARGUMENT", "ctx_task recover needs reason")
        cmd = tc.RecoverTask(task_id=_id(a), reason=a.reason, owner=a.owner, channel=channel, lease_seconds=lease)
    return _result(lc, caller, cmd)
