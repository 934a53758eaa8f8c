"""The task family's shared decisions, used by every task handler and by the handover: load a
task or refuse (``TASK_NOT_FOUND``), check a status transition, the dependency rules (a task
starts or finishes only when every dependency is done; no unknown dependency, no cycle), the
lease guard (who may write a leased task, see ``task_leases``), who a task's events are
directed to (delegation, see ``tasks``), and the append itself (``_emit``: each event checked
against the stream's version, the result folded with the projection's own ``fold``).
"""

from __future__ import annotations

from typing import Any

from .. import clock
from ..errors import CommandError
from ..events.kinds import Event
from ..projections.tasks import (
    STATUSES,
    TRANSITIONS,
    dependency_reaches,
    fold,
    get_row,
    lease_state,
    statuses,
    task_ids,
    view_of,
)
from .bus import CommandContext
from .task_commands import TaskResult, _duration, _slug, stream_of


def _load(ctx: CommandContext, channel: str, task_id: str) -> dict[str, Any]:
    channel = _slug(channel, "channel name")
    row = get_row(ctx.conn, channel, _slug(task_id, "task id"))
    if row is None:
        raise CommandError("TASK_NOT_FOUND", f"no task {task_id!r} in channel {channel!r}; see the tasks (ctx_task"
                           f" action=list channel={channel}, or `lean-ctx chat task list --channel {channel}`)")
    return row


def _transition(row: dict[str, Any], to: str) -> None:
    frm, allowed = row["status"], TRANSITIONS[row["status"]]
    if to in allowed:
        return
    if not allowed:
        hint = f"{frm} is final; create a new task if more work is needed"
    else:
        hint = f"from {frm} it can become: {', '.join(s for s in STATUSES if s in allowed)}"
    raise CommandError("TASK_INVALID_TRANSITION", f"task {row['task_id']!r} is {frm} and cannot become {to}; {hint}")


def _deps_ready(ctx: CommandContext, row: dict[str, Any], to: str) -> None:
    state = statuses(ctx.conn, row["channel"], row["depends_on"])
    waiting = [d for d in row["depends_on"] if state.get(d) != "done"]
    if waiting:
        verb = "start" if to == "in_progress" else "be done"
        raise CommandError(
            "TASK_DEPENDENCY_NOT_READY",
            f"task {row['task_id']!r} cannot {verb} before its dependencies are done; waiting on: "
            f"{', '.join(f'{d} ({state.get(d)})' for d in waiting)}",
        )


def _check_deps(ctx: CommandContext, channel: str, task_id: str, deps: list[str]) -> None:
    if task_id in deps:
        raise CommandError("TASK_DEPENDENCY_CYCLE", f"task {task_id!r} cannot depend on itself; remove it from --depends-on")
    unknown = sorted(set(deps) - task_ids(ctx.conn, channel))
    if unknown:
        raise CommandError(
            "TASK_UNKNOWN_DEPENDENCY",
            f"no task {', '.join(map(repr, unknown))} in channel {channel!r}: create it first, or fix --depends-on",
        )
    path = dependency_reaches(ctx.conn, channel, deps, task_id)
    if path is not None:
        raise CommandError(
            "TASK_DEPENDENCY_CYCLE",
            f"that would close a dependency cycle ({' → '.join([task_id, *path])}); remove one of those dependencies",
        )


def _lease_guard(ctx: CommandContext, row: dict[str, Any], actor: str | None, what: str) -> bool:
    """Refuse ``what`` when another agent holds the task's lease (active: LEASE_OWNER_MISMATCH,
    expired: LEASE_EXPIRED_RECOVER_REQUIRED). True when the task has a lease (held by ``actor``)."""
    state, left = lease_state(row["lease_expires_at"], ctx.now)
    if state == "none":
        return False
    holder = row["owner"]
    if holder != actor:
        if state == "active":
            raise CommandError(
                "LEASE_OWNER_MISMATCH",
                f"only {holder}, who holds the lease on task {row['task_id']!r} until {row['lease_expires_at']} "
                f"({left:.0f}s left), can {what} it; ask {holder}, or wait until the lease expires and `recover` it",
            )
        raise _recover_required(row, what)
    return True


def _recover_required(row: dict[str, Any], what: str) -> CommandError:
    return CommandError(
        "LEASE_EXPIRED_RECOVER_REQUIRED",
        f"the lease of {row['owner']} on task {row['task_id']!r} expired at {row['lease_expires_at']}; it is not "
        f"taken silently: to {what} it, first take it over (ctx_task action=recover task_id={row['task_id']} "
        f"channel={row['channel']} reason=..., or `lean-ctx chat task recover {row['task_id']} "
        f"--channel {row['channel']} --reason '...'`)",
    )


def _recipient(row: dict[str, Any], actor: str | None) -> str | None:
    delegate = row["to_agent"]
    if delegate is None:
        return None
    if actor != delegate:
        return delegate
    creator = row["created_by"]
    return creator if creator and creator != actor else None


def _emit(ctx: CommandContext, row: dict[str, Any], events: list[Event], *,
          to_agent: str | None = None) -> TaskResult:
    """Append ``events`` to the task's stream (each checked against the stream's version) and
    return the task as they leave it (folded with the projection's own ``fold``). They are
    directed to ``to_agent`` when given, else to the other party of a delegation."""
    stream = stream_of(row["channel"], row["task_id"])
    version = ctx.tx.stream_version(stream)
    after = row
    for i, ev in enumerate(events):
        after = fold(after, ev, ts=ctx.ts, actor=ctx.actor) or after
        ctx.emit(stream, ev, expected_version=version + i, to_agent=to_agent or _recipient(after, ctx.actor),
                 channel=row["channel"])
    return TaskResult(view_of(ctx.conn, after, ctx.now), events=[e.kind for e in events])


def _unchanged(ctx: CommandContext, row: dict[str, Any]) -> TaskResult:
    return TaskResult(view_of(ctx.conn, row, ctx.now), unchanged=True)


def _lease(ctx: CommandContext, seconds: float) -> tuple[float, str]:
    secs = _duration(seconds)
    return secs, clock.iso(ctx.now + secs)
