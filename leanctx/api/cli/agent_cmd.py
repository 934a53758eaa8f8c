"""``lean-ctx agent``: register, list, heartbeat, deregister."""

from __future__ import annotations

import os
import socket
import sys
from typing import Optional

import typer

from ... import clock
from .app import state
from .common import JSON, dispatch
from .groups import agent_app
from .render import emit_json, table, to_builtins



@agent_app.command("register")
def register(
    ctx: typer.Context,
    agent_type: str = typer.Option(..., "--type", "-t", help="Client or agent kind: claude, cursor, codex, ..."),
    role: str = typer.Option("dev", "--role", "-r", help="dev, review, test, plan, or your own."),
    project_root: Optional[str] = typer.Option(None, "--project-root", help="Default: the current project."),
    agent_id: Optional[str] = typer.Option(
        None, "--id", help="Use this identity (default: $LEAN_CTX_AGENT_ID, else a new short id)."
    ),
    json_: bool = JSON,
) -> None:
    """Register an agent; prints its id and name (like cursor-dev-1)."""
    from ...commands.agents import RegisterAgent

    st = state(ctx)
    v = dispatch(
        st,
        RegisterAgent(
            agent_type=agent_type,
            role=role,
            project_root=project_root or st.project_root(),
            agent_id=agent_id or os.environ.get("LEAN_CTX_AGENT_ID"),
            pid=os.getppid(),
            host=socket.gethostname(),
            session_id=os.environ.get("LEAN_CTX_SESSION_ID"),
        ),
    )
    if st.want_json(json_):
        emit_json(v)
    else:
        verb = "rejoined" if v.rejoined else "registered"
        sys.stdout.write(f"{verb} {v.name} (agent_id {v.agent_id}) in {v.project_root}\n")


@agent_app.command("list")
def list_(
    ctx: typer.Context,
    all_: bool = typer.Option(False, "--all", help="Include agents that left."),
    any_project: bool = typer.Option(False, "--any-project", help="Every project in this log, not only this one."),
    json_: bool = JSON,
) -> None:
    """Agents of this project with their live status (active / idle / stale / left)."""
    from ...projections.agents import list_agents

    st = state(ctx)
    lc = st.open()
    agents = list_agents(
        lc.projections.reader("agents"),
        now=clock.now(),
        project_root=None if any_project else st.project_root(),
        include_left=all_,
    )
    if st.want_json(json_):
        emit_json(agents)
        return
    if not agents:
        sys.stderr.write("no agents registered in this project (lean-ctx agent register --type T)\n")
        return
    rows = [to_builtins(a) for a in agents]
    for r in rows:
        r["seen"] = f"{r['age_seconds']:.0f}s ago"
    sys.stdout.write(table(rows, ["name", "agent_id", "status", "agent_type", "role", "seen", "pid"]) + "\n")


@agent_app.command("heartbeat")
def heartbeat(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="Agent id or name."),
    status: Optional[str] = typer.Option(None, "--status", help="ready, busy, idle, blocked, ..."),
    json_: bool = JSON,
) -> None:
    """Tell the registry the agent is alive."""
    from ...commands.agents import Heartbeat

    st = state(ctx)
    v = dispatch(st, Heartbeat(agent=agent, status=status))
    if st.want_json(json_):
        emit_json(v)
    else:
        sys.stdout.write(f"ok {v.name} ({v.agent_id}); next heartbeat within {v.ttl_seconds / 3:.0f}s\n")


@agent_app.command("deregister")
def deregister(
    ctx: typer.Context,
    agent: str = typer.Argument(..., help="Agent id or name."),
    reason: str = typer.Option("deregistered", "--reason", help="Why the agent leaves."),
    json_: bool = JSON,
) -> None:
    """Remove an agent from the live registry (its history stays in the log)."""
    from ...commands.agents import Deregister

    st = state(ctx)
    v = dispatch(st, Deregister(agent=agent, reason=reason))
    if st.want_json(json_):
        emit_json(v)
    else:
        sys.stdout.write(f"{v.name} ({v.agent_id}) {'had already left' if v.already_left else 'left'}\n")

