"""``lean-ctx chat roster`` and ``lean-ctx chat state``: one channel at a glance."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from .app import state
from .common import JSON
from .groups import chat_app
from .render import emit_json, table, to_builtins


def _check_at(value: str | None) -> str | None:
    """Refuse an ``--at`` that is not 'head', 'now' or an ISO timestamp (a usage error)."""
    if value in (None, "head", "now"):
        return value
    from datetime import datetime

    try:
        datetime.fromisoformat(value)  # 3.11 reads a trailing Z
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not 'head', 'now' or an ISO timestamp like 2025-01-31T12:00:00Z") from None
    return value


# what ``channel_state`` reads (all strong: current unless another writer lacked them); the
# eventual ones (savings, ledger) are not caught up for nothing, nor copied on a read-only log
STATE_PROJECTIONS = ("channels", "adapter_states", "agents", "tasks", "path_locks", "scent")

AT = typer.Option(
    None, "--at", callback=_check_at, help="Evaluate at: 'head' (default: the last event's time, so the same log prints the same "
    "bytes), 'now', or an ISO timestamp."
)


@chat_app.command("roster")
def roster_cmd(
    ctx: typer.Context,
    channel: str = typer.Argument("general", help="The channel (default: general)."),
    at: Optional[str] = AT,
    json_: bool = JSON,
) -> None:
    """A channel's members with their live status (from heartbeats and reported status)."""
    from ...channel_state import evaluation_time, roster

    st = state(ctx)
    lc = st.open()
    now, _ = evaluation_time(lc.store, at)
    members = roster(lc.projections.reader("channels"), channel, now=now, project=st.project_root())
    if st.want_json(json_):
        emit_json(members)
        return
    if not members:
        sys.stderr.write(f"no members in {channel} (lean-ctx chat init {channel} --members a,b)\n")
        return
    sys.stdout.write(table([to_builtins(m) for m in members],
                           ["name", "agent", "status", "reported_status", "harness", "last_seen"]) + "\n")


@chat_app.command("state")
def state_cmd(
    ctx: typer.Context,
    channel: str = typer.Argument("general", help="The channel (default: general)."),
    messages: int = typer.Option(5, "-n", "--messages", min=0, help="How many of the last messages."),
    at: Optional[str] = AT,
    json_: bool = JSON,
) -> None:
    """Tasks by state with owners and lease expiry, path locks, claims and the last messages."""
    from ...channel_state import channel_state, evaluation_time, render_state

    st = state(ctx)
    lc = st.open()
    now, position = evaluation_time(lc.store, at)
    lc.projections.ensure_current(STATE_PROJECTIONS)
    summary = channel_state(lc.store.read_connection(), channel, now=now, position=position,
                            project=st.project_root(), messages=messages)
    if st.want_json(json_):
        emit_json(summary)
    else:
        sys.stdout.write(render_state(summary))
