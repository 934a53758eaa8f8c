"""Task commands: create, update, claim, renew, done, block, release, recover.

Tasks live in a channel (stream ``task:<channel>/<task_id>``). States and transitions:
open → in_progress | blocked | cancelled; in_progress → open | blocked | done | cancelled;
blocked → open | in_progress | cancelled; done and cancelled are terminal. Writing the state a
task already has appends nothing and returns ``unchanged=True``. A task starts
(→ in_progress) or finishes (→ done) only when every dependency is done.

Only ``claim`` starts a task (it grants the lease; ``recover`` and a handover keep one going):
``update`` refuses to move a task to in_progress (``TASK_CLAIM_REQUIRED``), so no task is in
progress without an owner holding a lease. While another agent holds a task's lease, every write
of ``update`` — any field, not only the status or owner — is refused like the other verbs
(``LEASE_OWNER_MISMATCH``, or ``LEASE_EXPIRED_RECOVER_REQUIRED`` once it expired); a write that
changes nothing is no write. Moving out of in_progress by ``update`` ends the lease and keeps
the owner as an assignment, as ``block`` does.

Agents named by a task (``owner``, the delegate ``to_agent``) are registered agents, stored by
id: a name as the agents list shows it resolves to its id among the agents of the command's
project (as for messages; an id resolves in any project), and a reference no registered agent
matches is refused (``AGENT_NOT_FOUND``) instead of being kept as a string nobody receives.

Delegation: events of a task with ``to_agent`` are directed to the other party — to the
delegate when someone else acts, to the creator when the delegate acts — so each sees them
through ``TopicFilter(to_agent=...)``; every event carries ``channel=``. While the delegate is
live, only it may claim the task (``TASK_DELEGATED_TO_OTHER``, see ``task_delegation``).

The family is split by seam; this module holds the task's own handlers (create, update, done,
block) and re-exports every public name of the others, so ``leanctx.commands.tasks`` stays the
one import for the family:

- ``task_commands``: the command Structs, ``TaskResult``, constants, ``stream_of`` and the
  validation of every argument (``validate_lease`` included);
- ``task_rules``: the shared decisions (load, transitions, dependencies and cycles, the lease
  guard, delegation recipients, the append);
- ``task_leases``: claim, renew, release and recover, with the lease rules in its doc;
- ``task_delegation``: ``check_delegation``, who may claim a task delegated to another agent;
- ``task_handover``: ``handover_row`` and ``hand_over``, used by ``handoff.import``.
"""

from __future__ import annotations

from typing import Any

from ..errors import CommandError, InvalidInput
from ..events import NO_STREAM
from ..events.kinds import Event
from ..events.kinds.task import (
    TaskBlocked,
    TaskCompleted,
    TaskCreated,
    TaskStatusChanged,
    TaskUpdated,
)
from ..projections.agents import find_agent
from ..projections.tasks import STATUSES, fold, task_ids, view_of
from .bus import CommandContext, handles
from .task_commands import (
    DEFAULT_CHANNEL,
    DEFAULT_LEASE_SECONDS,
    MAX_LEASE_SECONDS,
    BlockTask,
    ClaimTask,
    CompleteTask,
    CreateTask,
    RecoverTask,
    ReleaseTask,
    RenewTask,
    TaskResult,
    UpdateTask,
    _agent,
    _bad,
    _deps,
    _files,
    _reason,
    _slug,
    _text,
    stream_of,
    validate_lease,
)
from .task_delegation import check_delegation
from .task_handover import hand_over, handover_row
from .task_leases import claim, recover, release, renew
from .task_rules import (
    _check_deps,
    _deps_ready,
    _emit,
    _lease_guard,
    _load,
    _recipient,
    _transition,
    _unchanged,
)

__all__ = [
    "DEFAULT_CHANNEL",
    "DEFAULT_LEASE_SECONDS",
    "MAX_LEASE_SECONDS",
    "BlockTask",
    "ClaimTask",
    "CompleteTask",
    "CreateTask",
    "RecoverTask",
    "ReleaseTask",
    "RenewTask",
    "TaskResult",
    "UpdateTask",
    "block",
    "check_delegation",
    "claim",
    "create",
    "done",
    "hand_over",
    "handover_row",
    "recover",
    "release",
    "renew",
    "stream_of",
    "update",
    "validate_lease",
]


# --- decisions of this module ---------------------------------------------------------

_FIELD_NAMES = {
    "title": "title", "owner": "owner", "owner_cleared": "owner", "depends_on": "dependencies",
    "files_hint": "files", "acceptance": "acceptance criteria", "acceptance_cleared": "acceptance criteria",
    "branch": "branch", "branch_cleared": "branch",
}


def _registered(ctx: CommandContext, ref: str, what: str, flag: str) -> str:
    """``ref`` as the id of a registered agent: its id (any project), or its name as the agents
    list shows it (among the agents of the command's project, as messages resolve names);
    ``AGENT_NOT_FOUND`` when none matches."""
    found = find_agent(ctx.conn, _agent(ref, f"{what} ({flag})"), now=ctx.now, project_root=ctx.project)
    if found is None:
        raise CommandError(
            "AGENT_NOT_FOUND",
            f"no agent {ref.strip()!r} is registered, so it cannot be the task's {what}: give an agent's id, or its "
            "name as the agents list shows it (ctx_agent action=list, or `lean-ctx agent list`)",
        )
    return found.agent_id


def _claim_required(row: dict[str, Any], why: str) -> CommandError:
    tid, channel = row["task_id"], row["channel"]
    return CommandError(
        "TASK_CLAIM_REQUIRED",
        f"task {tid!r} is {row['status']}: {why}; claim it (ctx_task action=claim task_id={tid} channel={channel},"
        f" or `lean-ctx chat task claim {tid} --channel {channel}`)",
    )


def _what(changes: dict[str, Any], to: str | None) -> str:
    """What an update does, for the lease guard's refusal ("change the title and status of")."""
    fields = list(dict.fromkeys(_FIELD_NAMES[k] for k in changes)) + (["status"] if to else [])
    listed = fields[0] if len(fields) == 1 else f"{', '.join(fields[:-1])} and {fields[-1]}"
    return f"change the {listed} of"


# --- handlers ------------------------------------------------------------------------

@handles(CreateTask, emits=("task.created",), result=TaskResult)
def create(ctx: CommandContext, cmd: CreateTask) -> TaskResult:
    from .chat import check_channel  # a task's channel is a chat channel name, so one rule for both

    try:
        channel = check_channel(cmd.channel)
    except InvalidInput as exc:  # the code tasks have always refused a bad channel with
        raise _bad(exc.message) from None
    title = _text(cmd.title, "the title", 200)
    owner = _registered(ctx, cmd.owner, "owner", "--owner") if cmd.owner else None
    to_agent = _registered(ctx, cmd.to_agent, "delegate", "--to") if cmd.to_agent else None
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
    elif cmd.owner is not None and (owner := _registered(ctx, cmd.owner, "owner", "--owner")) != row["owner"]:
        changes["owner"] = owner
    if cmd.depends_on is not None and (deps := _deps(cmd.depends_on)) != row["depends_on"]:
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
        if to == "in_progress":
            raise _claim_required(row, "a task starts only by a claim, which gives the claimer its lease")
    if changes or to is not None:
        leased = _lease_guard(ctx, row, ctx.actor, _what(changes, to))
        if ("owner" in changes or "owner_cleared" in changes) and to is None and row["status"] == "in_progress":
            if leased:
                raise CommandError(
                    "LEASE_CONFLICT",
                    f"task {row['task_id']!r} is leased by {row['owner']}: its owner changes only through "
                    "`release` (then another agent's `claim`) or `recover`",
                )
            raise _claim_required(row, "the owner of a task in progress is the agent that claimed it")
    if "depends_on" in changes:
        _check_deps(ctx, row["channel"], row["task_id"], changes["depends_on"])
    if to == "done":
        _deps_ready(ctx, {**row, "depends_on": changes.get("depends_on", row["depends_on"])}, to)
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
