"""``lean-ctx chat task``: create, list, show, update, claim, renew, done, block, release, recover."""

from __future__ import annotations

import sys
from typing import Any, Optional

import typer

from .app import state
from .common import JSON, dispatch
from .groups import chat_app

task_app = typer.Typer(
    help="Tasks of a channel: dependencies, delegation, claims with leases (renew, release, recover).",
    no_args_is_help=True,
)
chat_app.add_typer(task_app, name="task")

DEFAULT_LEASE = 900.0
CHANNEL = typer.Option("general", "--channel", "-c", help="The channel the task lives in.")
AS = typer.Option(None, "--as", help="Act as this agent (default: $LEAN_CTX_AGENT_ID, else local-<ppid>).")
TASK = typer.Argument(..., help="The task id (see `lean-ctx chat task list`).")


def _lease_opt() -> Any:
    return typer.Option(DEFAULT_LEASE, "--lease-seconds", "--lease", "--ttl",
                        help="Lease length in seconds (positive, finite).")


def _split(values: Optional[list[str]]) -> Optional[list[str]]:
    """Repeatable and comma-separated values; ``--opt ""`` gives an empty list (clears it)."""
    if values is None:
        return None
    return [p.strip() for v in values for p in v.split(",") if p.strip()]


def _out(ctx: typer.Context, json_: bool, result: Any, verb: str) -> None:
    st = state(ctx)
    if st.want_json(json_):
        from .render import emit_json

        emit_json(result)
        return
    t = result.task
    if result.unchanged:
        sys.stdout.write(f"{t.task_id} in #{t.channel} is already {t.status}: nothing changed\n")
        return
    line = f"{verb} {t.task_id} in #{t.channel}: {t.status}"
    if t.owner:
        line += f", owner {t.owner}"
    if t.lease_expires_at:
        line += f", lease until {t.lease_expires_at} ({t.lease_seconds:g}s)"
    if t.to_agent:
        line += f", delegated to {t.to_agent}"
    sys.stdout.write(line + "\n")


@task_app.command("create")
def create(
    ctx: typer.Context,
    title: str = typer.Option(..., "--title", "-t", help="What to do, in one line."),
    task_id: Optional[str] = typer.Option(None, "--id", help="Task id (default: t1, t2, ... in the channel)."),
    owner: Optional[str] = typer.Option(None, "--owner", help="The agent responsible for it."),
    to_agent: Optional[str] = typer.Option(None, "--to", help="Delegate it to this agent (it is told directly)."),
    depends_on: Optional[list[str]] = typer.Option(
        None, "--depends-on", help="Task ids that must be done first (repeatable or comma-separated)."),
    files: Optional[list[str]] = typer.Option(None, "--files", help="Files it will touch (repeatable or comma-separated)."),
    acceptance: Optional[str] = typer.Option(None, "--acceptance", help="When is it done."),
    branch: Optional[str] = typer.Option(None, "--branch", help="The git branch of the work."),
    channel: str = CHANNEL,
    as_: Optional[str] = AS,
    json_: bool = JSON,
) -> None:
    """Create a task (open) in a channel; prints its id."""
    from ...commands.tasks import CreateTask

    cmd = CreateTask(title=title, task_id=task_id, channel=channel, owner=owner, to_agent=to_agent,
                     depends_on=_split(depends_on) or [], files_hint=_split(files) or [], acceptance=acceptance,
                     branch=branch)
    _out(ctx, json_, dispatch(state(ctx), cmd, actor=as_), "created")


@task_app.command("list")
def list_(
    ctx: typer.Context,
    status: Optional[list[str]] = typer.Option(
        None, "--status", "-s", help="open, in_progress, blocked, done, cancelled (repeatable or comma-separated)."),
    owner: Optional[str] = typer.Option(None, "--owner", help="Only tasks this agent owns."),
    to_agent: Optional[str] = typer.Option(None, "--to", help="Only tasks delegated to this agent."),
    mine: bool = typer.Option(False, "--mine", help="Only tasks owned by or delegated to me (see --as)."),
    channel: str = CHANNEL,
    any_channel: bool = typer.Option(False, "--any-channel", help="Tasks of every channel."),
    as_: Optional[str] = AS,
    json_: bool = JSON,
) -> None:
    """Tasks with their state, owner, dependencies and lease (active / expired)."""
    from ... import clock
    from ...errors import InvalidInput
    from ...identity import agent_identity
    from ...projections.tasks import STATUSES, list_tasks
    from .render import emit_json, table

    wanted = _split(status)
    bad = [s for s in wanted or [] if s not in STATUSES]
    if bad:
        raise InvalidInput("TASK_INVALID_ARGUMENT", f"unknown status {', '.join(bad)}: use {', '.join(STATUSES)}")
    st = state(ctx)
    lc = st.open()
    tasks = list_tasks(
        lc.projections.reader("tasks"), now=clock.now(), channel=None if any_channel else channel,
        status=wanted or None, owner=owner, to_agent=to_agent, assigned_to=(as_ or agent_identity()) if mine else None,
    )
    if st.want_json(json_):
        emit_json(tasks)
        return
    if not tasks:
        sys.stderr.write("no tasks (lean-ctx chat task create --title ...)\n")
        return
    rows = []
    for t in tasks:
        lease = "" if t.lease_state == "none" else (
            f"{t.lease_remaining_seconds:.0f}s left" if t.lease_state == "active" else "expired")
        rows.append({"id": t.task_id, "channel": t.channel, "status": t.status, "owner": t.owner, "to": t.to_agent,
                     "lease": lease, "depends_on": ",".join(t.depends_on), "title": t.title[:60]})
    cols = ["id", "status", "owner", "to", "lease", "depends_on", "title"]
    if any_channel:
        cols.insert(1, "channel")
    sys.stdout.write(table(rows, cols) + "\n")


@task_app.command("show")
def show(ctx: typer.Context, task_id: str = TASK, channel: str = CHANNEL, json_: bool = JSON) -> None:
    """One task in full: dependencies (and which are not done), lease, recovery record."""
    from ... import clock
    from ...errors import CommandError
    from ...projections.tasks import get_task
    from .render import emit_json, to_builtins

    st = state(ctx)
    t = get_task(st.open().projections.reader("tasks"), channel, task_id, now=clock.now())
    if t is None:
        raise CommandError("TASK_NOT_FOUND", f"no task {task_id!r} in channel {channel!r}; see `lean-ctx chat task list`")
    if st.want_json(json_):
        emit_json(t)
        return
    for k, v in to_builtins(t).items():
        if v is None or v == []:
            continue
        sys.stdout.write(f"{k:<26} {', '.join(v) if isinstance(v, list) else v}\n")


@task_app.command("update")
def update(
    ctx: typer.Context,
    task_id: str = TASK,
    title: Optional[str] = typer.Option(None, "--title", "-t", help="A new title."),
    owner: Optional[str] = typer.Option(None, "--owner", help="A new owner."),
    clear_owner: bool = typer.Option(False, "--clear-owner", help="Remove the owner."),
    depends_on: Optional[list[str]] = typer.Option(
        None, "--depends-on", help="Replace the dependencies (repeatable or comma-separated; \"\" removes them)."),
    files: Optional[list[str]] = typer.Option(None, "--files", help="Replace the files hint (\"\" removes it)."),
    acceptance: Optional[str] = typer.Option(None, "--acceptance", help="New acceptance criteria (\"\" removes them)."),
    branch: Optional[str] = typer.Option(None, "--branch", help="A new branch."),
    clear_branch: bool = typer.Option(False, "--clear-branch", help="Remove the branch."),
    status: Optional[str] = typer.Option(
        None, "--status", "-s", help="open, in_progress, blocked, done or cancelled (transitions are checked)."),
    reason: Optional[str] = typer.Option(None, "--reason", help="Why (kept as the blocked reason)."),
    channel: str = CHANNEL,
    as_: Optional[str] = AS,
    json_: bool = JSON,
) -> None:
    """Change a task's fields or state; writing what it already has changes nothing."""
    from ...commands.tasks import UpdateTask

    cmd = UpdateTask(task_id=task_id, channel=channel, title=title, owner=owner, clear_owner=clear_owner,
                     depends_on=_split(depends_on), files_hint=_split(files), acceptance=acceptance, branch=branch,
                     clear_branch=clear_branch, status=status, reason=reason)
    _out(ctx, json_, dispatch(state(ctx), cmd, actor=as_), "updated")


@task_app.command("claim")
def claim(ctx: typer.Context, task_id: str = TASK, lease_seconds: float = _lease_opt(), channel: str = CHANNEL,
          as_: Optional[str] = AS, json_: bool = JSON) -> None:
    """Take a task with a lease (exit 2 with LEASE_CONFLICT when another agent holds it)."""
    from ...commands.tasks import ClaimTask

    cmd = ClaimTask(task_id=task_id, channel=channel, lease_seconds=lease_seconds)
    _out(ctx, json_, dispatch(state(ctx), cmd, actor=as_), "claimed")


@task_app.command("renew")
def renew(ctx: typer.Context, task_id: str = TASK, lease_seconds: float = _lease_opt(), channel: str = CHANNEL,
          as_: Optional[str] = AS, json_: bool = JSON) -> None:
    """Extend your lease on a task (from now)."""
    from ...commands.tasks import RenewTask

    cmd = RenewTask(task_id=task_id, channel=channel, lease_seconds=lease_seconds)
    _out(ctx, json_, dispatch(state(ctx), cmd, actor=as_), "renewed")


@task_app.command("done")
def done(ctx: typer.Context, task_id: str = TASK, channel: str = CHANNEL, as_: Optional[str] = AS,
         json_: bool = JSON) -> None:
    """Mark a task done (every dependency must be done; the lease holder only)."""
    from ...commands.tasks import CompleteTask

    _out(ctx, json_, dispatch(state(ctx), CompleteTask(task_id=task_id, channel=channel), actor=as_), "completed")


@task_app.command("block")
def block(ctx: typer.Context, task_id: str = TASK,
          reason: str = typer.Option(..., "--reason", help="What it waits for."), channel: str = CHANNEL,
          as_: Optional[str] = AS, json_: bool = JSON) -> None:
    """Mark a task blocked, with the reason (its lease ends)."""
    from ...commands.tasks import BlockTask

    cmd = BlockTask(task_id=task_id, channel=channel, reason=reason)
    _out(ctx, json_, dispatch(state(ctx), cmd, actor=as_), "blocked")


@task_app.command("release")
def release(ctx: typer.Context, task_id: str = TASK,
            reason: Optional[str] = typer.Option(None, "--reason", help="Why you give it back."),
            channel: str = CHANNEL, as_: Optional[str] = AS, json_: bool = JSON) -> None:
    """Give your claimed task back: it is open again, without owner or lease."""
    from ...commands.tasks import ReleaseTask

    cmd = ReleaseTask(task_id=task_id, channel=channel, reason=reason)
    _out(ctx, json_, dispatch(state(ctx), cmd, actor=as_), "released")


@task_app.command("recover")
def recover(
    ctx: typer.Context,
    task_id: str = TASK,
    reason: str = typer.Option(..., "--reason", help="Why the expired lease is taken over (recorded)."),
    owner: Optional[str] = typer.Option(None, "--owner", help="The new owner (default: the acting agent)."),
    lease_seconds: float = _lease_opt(),
    channel: str = CHANNEL,
    as_: Optional[str] = AS,
    json_: bool = JSON,
) -> None:
    """Take over a task whose lease expired (LEASE_NOT_EXPIRED while it is still active)."""
    from ...commands.tasks import RecoverTask

    cmd = RecoverTask(task_id=task_id, channel=channel, reason=reason, owner=owner, lease_seconds=lease_seconds)
    _out(ctx, json_, dispatch(state(ctx), cmd, actor=as_), "recovered")
