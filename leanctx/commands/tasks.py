"""Task commands: create, update, claim, renew, done, block, release, recover.

Tasks live in a channel (stream ``task:<channel>/<task_id>``). States and transitions:
open → in_progress | blocked | cancelled; in_progress → open | blocked | done | cancelled;
blocked → open | in_progress | cancelled; done and cancelled are terminal. Writing the state a
task already has appends nothing and returns ``unchanged=True``. A task starts
(→ in_progress) or finishes (→ done) only when every dependency is done.

Leases: ``claim`` makes the actor the owner with a lease of ``lease_seconds``; a lease exists
only while the task is in progress. An agent other than the holder can neither claim
(``LEASE_CONFLICT``), nor renew, release, complete, block or change the status or owner
(``LEASE_OWNER_MISMATCH``) while the lease is active. An expired lease of another agent is never
taken silently: every such write is refused with ``LEASE_EXPIRED_RECOVER_REQUIRED`` until
someone runs ``recover`` (a new owner and a reason, recorded with the previous owner and
expiry). The holder itself may still claim, renew, release or complete after its own lease
expired, as long as nobody recovered it.

Delegation: events of a task with ``to_agent`` are directed to the other party — to the
delegate when someone else acts, to the creator when the delegate acts — so each sees them
through ``TopicFilter(to_agent=...)``; every event carries ``channel=``.

Handover (``hand_over``, called by ``handoff.import`` with ``apply_workflow``; not a command of
its own, because its authority is a verified handoff signed by the owner): a task of the
bundle that its sender still owns passes to the importer — ``task.handed_over``, directed to
the previous owner, status unchanged, a fresh lease for the importer when the task is in
progress. The other transitions cannot say this honestly: only the holder may ``release``,
``recover`` is for abandoned (expired) leases and records a recovery, and delegation is fixed
at creation. Left alone, with a code: a task not in this log (``TASK_NOT_FOUND``), finished
(``TASK_HANDOVER_FINISHED``), owned by someone other than the sender or by nobody
(``TASK_HANDOVER_NOT_SENDERS``), or claimed again by the sender after the handoff was created
(``TASK_HANDOVER_STALE``: the handoff does not cover that claim).
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec

from .. import clock
from ..errors import CommandError, InvalidInput
from ..events import NO_STREAM
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
from ..projections.tasks import (
    STATUSES,
    TRANSITIONS,
    TaskView,
    dependency_reaches,
    fold,
    get_row,
    lease_state,
    statuses,
    task_ids,
    view_of,
)
from .bus import Command, CommandContext, handles

DEFAULT_CHANNEL = "general"
DEFAULT_LEASE_SECONDS = 900.0
MAX_LEASE_SECONDS = 30 * 24 * 3600.0

_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_AGENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_CTRL = re.compile(r"[\x00-\x1f\x7f]")
_TASKS = "see `lean-ctx chat task list`"


def stream_of(channel: str, task_id: str) -> str:
    return f"task:{channel}/{task_id}"


# --- commands ------------------------------------------------------------------------


class CreateTask(Command, frozen=True):
    name = "task.create"
    title: str
    task_id: str | None = None  # generated (t1, t2, ... per channel) when absent
    channel: str = DEFAULT_CHANNEL
    owner: str | None = None
    to_agent: str | None = None  # delegate the task to this agent
    depends_on: list[str] = []
    files_hint: list[str] = []
    acceptance: str | None = None
    branch: str | None = None


class UpdateTask(Command, frozen=True):
    name = "task.update"
    task_id: str
    channel: str = DEFAULT_CHANNEL
    title: str | None = None
    owner: str | None = None
    clear_owner: bool = False
    depends_on: list[str] | None = None  # replaces the list; [] removes every dependency
    files_hint: list[str] | None = None  # replaces the list
    acceptance: str | None = None  # "" removes it
    branch: str | None = None
    clear_branch: bool = False
    status: str | None = None
    reason: str | None = None  # why (kept as the blocked reason when the status becomes blocked)


class ClaimTask(Command, frozen=True):
    name = "task.claim"
    task_id: str
    channel: str = DEFAULT_CHANNEL
    lease_seconds: float = DEFAULT_LEASE_SECONDS


class RenewTask(Command, frozen=True):
    name = "task.renew"
    task_id: str
    channel: str = DEFAULT_CHANNEL
    lease_seconds: float = DEFAULT_LEASE_SECONDS


class CompleteTask(Command, frozen=True):
    name = "task.done"
    task_id: str
    channel: str = DEFAULT_CHANNEL


class BlockTask(Command, frozen=True):
    name = "task.block"
    task_id: str
    reason: str
    channel: str = DEFAULT_CHANNEL


class ReleaseTask(Command, frozen=True):
    name = "task.release"
    task_id: str
    channel: str = DEFAULT_CHANNEL
    reason: str | None = None


class RecoverTask(Command, frozen=True):
    name = "task.recover"
    task_id: str
    reason: str
    owner: str | None = None  # the new owner; default: the acting agent
    channel: str = DEFAULT_CHANNEL
    lease_seconds: float = DEFAULT_LEASE_SECONDS


class TaskResult(msgspec.Struct, frozen=True):
    """What a task command did: the task as its events leave it, and the kinds it appended
    (none and ``unchanged=True`` for a same-state write)."""

    task: TaskView
    ok: bool = True
    unchanged: bool = False
    events: list[str] = []


# --- validation ----------------------------------------------------------------------


def _bad(message: str) -> InvalidInput:
    return InvalidInput("TASK_INVALID_ARGUMENT", message)


def _slug(value: str, what: str) -> str:
    value = value.strip()
    if not _SLUG.match(value):
        raise _bad(f"{what} {value!r} is not valid: use 1-64 letters, digits, '.', '_' or '-', "
                   "starting with a letter or digit")
    return value


def _agent(value: str, what: str) -> str:
    value = value.strip()
    if not _AGENT.match(value):
        raise _bad(f"{what} {value!r} is not a valid agent id: use 1-128 letters, digits, '.', '_', ':' or '-'")
    return value


def _text(value: str, what: str, limit: int, *, multiline: bool = False) -> str:
    value = value.strip()
    if not value:
        raise _bad(f"{what} must not be empty")
    if len(value) > limit:
        raise _bad(f"{what} is {len(value)} characters long; keep it to {limit}")
    if _CTRL.search(value.replace("\n", "").replace("\t", "") if multiline else value):
        raise _bad(f"{what} must not contain control characters{'' if multiline else ' or line breaks'}")
    return value


def _files(values: list[str]) -> list[str]:
    out: list[str] = []
    for v in values:
        v = _text(v, "a files hint", 512)
        if v not in out:
            out.append(v)
    if len(out) > 200:
        raise _bad(f"{len(out)} files hints given; keep it to 200")
    return out


def _deps(values: list[str]) -> list[str]:
    return sorted({_slug(v, "dependency id") for v in values})


def _duration(seconds: Any) -> float:
    ok = isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds)
    if not ok or not 0 < seconds <= MAX_LEASE_SECONDS:
        raise InvalidInput(
            "LEASE_INVALID_DURATION",
            f"lease duration {seconds!r} is not valid: give a finite number of seconds above 0 and at most "
            f"{MAX_LEASE_SECONDS:.0f} (30 days), e.g. --lease-seconds 900",
        )
    return float(seconds)


validate_lease = _duration  # for other families that hand out leases (handoff.import)


def _reason(reason: str | None, code: str, what: str) -> str:
    text = (reason or "").strip()
    if not text:
        raise InvalidInput(code, f"{what} needs a non-empty reason (--reason '...')")
    if len(text) > 1000:
        raise InvalidInput(code, f"the reason is {len(text)} characters long; keep it to 1000")
    return text


def _actor(ctx: CommandContext, what: str) -> str:
    if not ctx.actor:
        raise _bad(f"{what} needs an acting agent: set LEAN_CTX_AGENT_ID or pass --as")
    return ctx.actor


# --- shared decisions ----------------------------------------------------------------


def _load(ctx: CommandContext, channel: str, task_id: str) -> dict[str, Any]:
    channel = _slug(channel, "channel name")
    row = get_row(ctx.conn, channel, _slug(task_id, "task id"))
    if row is None:
        raise CommandError("TASK_NOT_FOUND", f"no task {task_id!r} in channel {channel!r}; {_TASKS} --channel {channel}")
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
        f"taken silently: to {what} it, first take it over with `lean-ctx chat task recover {row['task_id']} "
        f"--channel {row['channel']} --reason '...'`",
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


# --- handlers ------------------------------------------------------------------------

@handles(CreateTask, emits=("task.created",), result=TaskResult)
def create(ctx: CommandContext, cmd: CreateTask) -> TaskResult:
    channel = _slug(cmd.channel, "channel name")
    title = _text(cmd.title, "the title", 200)
    owner = _agent(cmd.owner, "owner") if cmd.owner else None
    to_agent = _agent(cmd.to_agent, "delegate (--to)") if cmd.to_agent else None
    files = _files(cmd.files_hint)
    acceptance = _text(cmd.acceptance, "the acceptance criteria", 4000, multiline=True) if cmd.acceptance else None
    branch = _text(cmd.branch, "the branch", 200) if cmd.branch else None
    deps = _deps(cmd.depends_on)
    existing = task_ids(ctx.conn, channel)
    if cmd.task_id is not None:
        task_id = _slug(cmd.task_id, "task id")
        if task_id in existing:
            raise CommandError(
                "TASK_ALREADY_EXISTS",
                f"task {task_id!r} already exists in channel {channel!r}; pick another id or leave --id out",
            )
    else:
        n = len(existing) + 1
        while f"t{n}" in existing:
            n += 1
        task_id = f"t{n}"
    _check_deps(ctx, channel, task_id, deps)
    ev = TaskCreated(channel=channel, task_id=task_id, title=title, owner=owner, to_agent=to_agent,
                     depends_on=deps, files_hint=files, acceptance=acceptance, branch=branch)
    row = fold(None, ev, ts=ctx.ts, actor=ctx.actor)
    assert row is not None
    stream = stream_of(channel, task_id)
    ctx.emit(stream, ev, expected_version=NO_STREAM, to_agent=_recipient(row, ctx.actor), channel=channel)
    return TaskResult(view_of(ctx.conn, row, ctx.now), events=[ev.kind])


@handles(UpdateTask, emits=("task.updated", "task.status_changed"), result=TaskResult)
def update(ctx: CommandContext, cmd: UpdateTask) -> TaskResult:
    row = _load(ctx, cmd.channel, cmd.task_id)
    if cmd.clear_owner and cmd.owner is not None:
        raise _bad("give either --owner or --clear-owner, not both")
    if cmd.clear_branch and cmd.branch is not None:
        raise _bad("give either --branch or --clear-branch, not both")
    if cmd.status is not None and cmd.status not in STATUSES:
        raise _bad(f"status {cmd.status!r} is not one of: {', '.join(STATUSES)}")
    changes: dict[str, Any] = {}
    if cmd.title is not None and (title := _text(cmd.title, "the title", 200)) != row["title"]:
        changes["title"] = title
    if cmd.clear_owner and row["owner"] is not None:
        changes["owner_cleared"] = True
    elif cmd.owner is not None and (owner := _agent(cmd.owner, "owner")) != row["owner"]:
        changes["owner"] = owner
    if cmd.depends_on is not None and (deps := _deps(cmd.depends_on)) != row["depends_on"]:
        _check_deps(ctx, row["channel"], row["task_id"], deps)
        changes["depends_on"] = deps
    if cmd.files_hint is not None and (files := _files(cmd.files_hint)) != row["files_hint"]:
        changes["files_hint"] = files
    if cmd.acceptance is not None:
        if not cmd.acceptance.strip():
            if row["acceptance"] is not None:
                changes["acceptance_cleared"] = True
        elif (acc := _text(cmd.acceptance, "the acceptance criteria", 4000, multiline=True)) != row["acceptance"]:
            changes["acceptance"] = acc
    if cmd.clear_branch and row["branch"] is not None:
        changes["branch_cleared"] = True
    elif cmd.branch is not None and (branch := _text(cmd.branch, "the branch", 200)) != row["branch"]:
        changes["branch"] = branch
    to = cmd.status if cmd.status is not None and cmd.status != row["status"] else None
    if to is not None:
        _transition(row, to)
    if to is not None or "owner" in changes or "owner_cleared" in changes:
        leased = _lease_guard(ctx, row, ctx.actor, f"change the {'status' if to else 'owner'} of")
        if leased and ("owner" in changes or "owner_cleared" in changes) and to in (None, "in_progress"):
            raise CommandError(
                "LEASE_CONFLICT",
                f"task {row['task_id']!r} is leased by {row['owner']}: its owner changes only through "
                "`release` (then another agent's `claim`) or `recover`",
            )
    if to in ("in_progress", "done"):
        after_deps = {**row, "depends_on": changes.get("depends_on", row["depends_on"])}
        _deps_ready(ctx, after_deps, to)
    events: list[Event] = []
    if changes:
        events.append(TaskUpdated(channel=row["channel"], task_id=row["task_id"], **changes))
    if to is not None:
        reason = cmd.reason.strip() if cmd.reason and cmd.reason.strip() else None
        if reason is not None:
            reason = _text(reason, "the reason", 1000)
        events.append(TaskStatusChanged(channel=row["channel"], task_id=row["task_id"], from_status=row["status"],
                                        to_status=to, reason=reason))
    if not events:
        return _unchanged(ctx, row)
    return _emit(ctx, row, events)


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
    _deps_ready(ctx, row, "in_progress")
    return _emit(ctx, row, [TaskClaimed(channel=row["channel"], task_id=row["task_id"], owner=actor,
                                        lease_seconds=secs, lease_expires_at=expires, from_status=row["status"])])


def _held_lease(ctx: CommandContext, row: dict[str, Any], actor: str, what: str) -> None:
    if not _lease_guard(ctx, row, actor, what):
        raise CommandError(
            "LEASE_NOT_FOUND",
            f"task {row['task_id']!r} has no lease to {what} (it is {row['status']}); claim it first "
            "(`lean-ctx chat task claim`)" + (", or reopen it with `task update --status open`"
                                              if what == "release" and row["status"] != "open" else ""),
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


@handles(CompleteTask, emits=("task.completed",), result=TaskResult)
def done(ctx: CommandContext, cmd: CompleteTask) -> TaskResult:
    row = _load(ctx, cmd.channel, cmd.task_id)
    if row["status"] == "done":
        return _unchanged(ctx, row)
    _transition(row, "done")
    _lease_guard(ctx, row, ctx.actor, "complete")
    _deps_ready(ctx, row, "done")
    return _emit(ctx, row, [TaskCompleted(channel=row["channel"], task_id=row["task_id"],
                                          owner=row["owner"] or ctx.actor)])


@handles(BlockTask, emits=("task.blocked",), result=TaskResult)
def block(ctx: CommandContext, cmd: BlockTask) -> TaskResult:
    row = _load(ctx, cmd.channel, cmd.task_id)
    reason = _reason(cmd.reason, "TASK_INVALID_ARGUMENT", "blocking a task")
    if row["status"] == "blocked" and row["blocked_reason"] == reason:
        return _unchanged(ctx, row)
    if row["status"] != "blocked":
        _transition(row, "blocked")
    _lease_guard(ctx, row, ctx.actor, "block")
    return _emit(ctx, row, [TaskBlocked(channel=row["channel"], task_id=row["task_id"], from_status=row["status"],
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


# --- handover (handoff.import with apply_workflow) ---------------------------------------


def handover_row(ctx: CommandContext, channel: str, task_id: str, *, sender: str, receiver: str,
                 since: str) -> dict[str, Any] | None:
    """The row of a task that a handoff of ``sender`` (created at ``since``) may hand to
    ``receiver``; None when ``receiver`` already owns it. Raises (with the reason) when the
    task is left alone: see the module doc."""
    row = _load(ctx, channel, task_id)
    where = f"task {row['task_id']!r} of channel {row['channel']!r}"
    if row["status"] in ("done", "cancelled"):
        raise CommandError("TASK_HANDOVER_FINISHED", f"{where} is already {row['status']} here: nothing to continue")
    owner = row["owner"]
    if owner == receiver:
        return None
    if owner is None:
        raise CommandError("TASK_HANDOVER_NOT_SENDERS",
                           f"nobody owns {where} here ({row['status']}), {sender} does not any more: claim it with "
                           f"`lean-ctx chat task claim {row['task_id']} --channel {row['channel']}`")
    if owner != sender:
        raise CommandError("TASK_HANDOVER_NOT_SENDERS",
                           f"{where} is owned by {owner}, not by {sender} who sent the handoff: it stays with {owner}")
    if row["claimed_at"] is not None and row["claimed_at"] > since:
        raise CommandError("TASK_HANDOVER_STALE",
                           f"{sender} claimed {where} again at {row['claimed_at']}, after the handoff was created "
                           f"({since}): the handoff does not cover that claim; ask {sender} for a new handoff")
    return row


def hand_over(ctx: CommandContext, row: dict[str, Any], *, receiver: str, handoff_id: str,
              lease_seconds: float) -> TaskResult:
    """Hand the task of ``row`` (from ``handover_row``) to ``receiver``: ``task.handed_over``,
    with a lease of ``lease_seconds`` when it is in progress."""
    lease: dict[str, Any] = {}
    if row["status"] == "in_progress":
        secs, expires = _lease(ctx, lease_seconds)
        lease = {"lease_seconds": secs, "lease_expires_at": expires}
    ev = TaskHandedOver(channel=row["channel"], task_id=row["task_id"], owner=_agent(receiver, "new owner"),
                        previous_owner=row["owner"], handoff_id=handoff_id, status=row["status"],
                        previous_lease_expires_at=row["lease_expires_at"], **lease)
    return _emit(ctx, row, [ev], to_agent=row["owner"] if row["owner"] != ctx.actor else None)
