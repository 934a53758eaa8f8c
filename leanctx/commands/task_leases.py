"""Lease handlers of the task family: claim, renew, release, recover.

Leases: ``claim`` makes the actor the owner with a lease of ``lease_seconds``; a lease exists
only while the task is in progress. An agent other than the holder can neither claim
(``LEASE_CONFLICT``), nor renew, release, complete, block or change the status or owner
(``LEASE_OWNER_MISMATCH``) while the lease is active. An expired lease of another agent is never
taken silently: every such write is refused with ``LEASE_EXPIRED_RECOVER_REQUIRED`` until
someone runs ``recover`` (a new owner and a reason, recorded with the previous owner and
expiry). The holder itself may still claim, renew, release or complete after its own lease
expired, as long as nobody recovered it. A fresh claim of a task delegated to another agent is
refused while that agent is live (``TASK_DELEGATED_TO_OTHER``, see ``task_delegation``).
"""

from __future__ import annotations

from typing import Any

from ..errors import CommandError
from ..events.kinds.task import TaskClaimed, TaskRecovered, TaskReleased, TaskRenewed
from ..projections.tasks import lease_state
from .bus import CommandContext, handles
from .task_commands import (
    ClaimTask,
    RecoverTask,
    ReleaseTask,
    RenewTask,
    TaskResult,
    _actor,
    _agent,
    _bad,
    _duration,
    _reason,
    _text,
)
from .task_delegation import check_delegation
from .task_rules import _deps_ready, _emit, _lease, _lease_guard, _load, _recover_required, _transition


@handles(ClaimTask, emits=("task.claimed", "task.renewed"), result=TaskResult)
def claim(ctx: CommandContext, cmd: ClaimTask) -> TaskResult:
    actor = _actor(ctx, "claiming a task")
    secs = _duration(cmd.lease_seconds)
    row = _load(ctx, cmd.channel, cmd.task_id)
    state, left = lease_state(row["lease_expires_at"], ctx.now)
    if state != "none" and row["owner"] != actor:
        if state == "active":
            raise CommandError(
                "LEASE_CONFLICT",
                f"task {row['task_id']!r} is claimed by {row['owner']} until {row['lease_expires_at']} "
                f"({left:.0f}s left); pick another task, ask {row['owner']} to release it, or `recover` it once the "
                "lease has expired",
            )
        raise _recover_required(row, "claim")
    secs, expires = _lease(ctx, secs)
    if state != "none":  # the holder claims again: a renewal
        return _emit(ctx, row, [TaskRenewed(channel=row["channel"], task_id=row["task_id"], owner=actor,
                                            lease_seconds=secs, lease_expires_at=expires)])
    if row["status"] != "in_progress":
        _transition(row, "in_progress")
    check_delegation(ctx, row, actor)
    _deps_ready(ctx, row, "in_progress")
    return _emit(ctx, row, [TaskClaimed(channel=row["channel"], task_id=row["task_id"], owner=actor,
                                        lease_seconds=secs, lease_expires_at=expires, from_status=row["status"])])


def _held_lease(ctx: CommandContext, row: dict[str, Any], actor: str, what: str) -> None:
    if not _lease_guard(ctx, row, actor, what):
        tid = row["task_id"]
        reopen = (f"; or reopen it (ctx_task action=update task_id={tid} status=open, or `lean-ctx chat task update"
                  f" {tid} --status open`)") if what == "release" and row["status"] != "open" else ""
        raise CommandError(
            "LEASE_NOT_FOUND",
            f"task {tid!r} has no lease to {what} (it is {row['status']}); claim it first (ctx_task action=claim"
            f" task_id={tid}, or `lean-ctx chat task claim {tid}`)" + reopen,
        )


@handles(RenewTask, emits=("task.renewed",), result=TaskResult)
def renew(ctx: CommandContext, cmd: RenewTask) -> TaskResult:
    actor = _actor(ctx, "renewing a lease")
    secs = _duration(cmd.lease_seconds)
    row = _load(ctx, cmd.channel, cmd.task_id)
    _held_lease(ctx, row, actor, "renew")
    secs, expires = _lease(ctx, secs)
    return _emit(ctx, row, [TaskRenewed(channel=row["channel"], task_id=row["task_id"], owner=actor,
                                        lease_seconds=secs, lease_expires_at=expires)])


@handles(ReleaseTask, emits=("task.released",), result=TaskResult)
def release(ctx: CommandContext, cmd: ReleaseTask) -> TaskResult:
    actor = _actor(ctx, "releasing a task")
    row = _load(ctx, cmd.channel, cmd.task_id)
    _held_lease(ctx, row, actor, "release")
    reason = _text(cmd.reason, "the reason", 1000) if cmd.reason and cmd.reason.strip() else None
    return _emit(ctx, row, [TaskReleased(channel=row["channel"], task_id=row["task_id"], owner=actor,
                                         reason=reason)])


@handles(RecoverTask, emits=("task.recovered",), result=TaskResult)
def recover(ctx: CommandContext, cmd: RecoverTask) -> TaskResult:
    new_owner = cmd.owner or ctx.actor
    if not new_owner:
        raise _bad("recovering a lease needs a new owner: pass --owner (or act as an agent with --as)")
    new_owner = _agent(new_owner, "new owner")
    reason = _reason(cmd.reason, "LEASE_INVALID_REASON", "recovering a lease")
    secs = _duration(cmd.lease_seconds)
    row = _load(ctx, cmd.channel, cmd.task_id)
    state, left = lease_state(row["lease_expires_at"], ctx.now)
    if state == "none":
        raise CommandError(
            "LEASE_NOT_FOUND",
            f"task {row['task_id']!r} has no lease to recover (it is {row['status']}); claim it instead",
        )
    if state == "active":
        raise CommandError(
            "LEASE_NOT_EXPIRED",
            f"the lease of {row['owner']} on task {row['task_id']!r} is active until {row['lease_expires_at']} "
            f"({left:.0f}s left); only an expired lease can be recovered: ask {row['owner']} to release it, or wait",
        )
    secs, expires = _lease(ctx, secs)
    return _emit(ctx, row, [TaskRecovered(
        channel=row["channel"], task_id=row["task_id"], owner=new_owner, previous_owner=row["owner"],
        previous_lease_expires_at=row["lease_expires_at"], recovery_reason=reason, lease_seconds=secs,
        lease_expires_at=expires,
    )])
