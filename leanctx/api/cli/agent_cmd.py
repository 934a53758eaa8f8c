"""``lean-ctx agent``: register, list, heartbeat, deregister, budget, ledger."""

from __future__ import annotations

import os
import socket
import sys
from typing import Optional

import typer

from ... import clock
from ...identity import agent_identity
from .app import state
from .common import JSON, dispatch, one_of
from .groups import agent_app
from .render import emit_json, table, to_builtins

LEDGER_AREAS = ("tool", "tokens", "read", "cache", "knowledge")  # see projections/ledger.py


@agent_app.command("register")
def register(
    ctx: typer.Context,
    agent_type: str = typer.Option(..., "--type", "-t", help="Client or agent kind: claude, cursor, codex, ..."),
    role: str = typer.Option("dev", "--role", "-r", help="dev, review, test, plan, or your own."),
    project_root: Optional[str] = typer.Option(None, "--project-root", help="Default: the current project."),
    agent_id: Optional[str] = typer.Option(
        None,
        "--id",
        help="Use this identity (default: $LEAN_CTX_AGENT_ID, else this shell's identity local-<pid>, "
        "the one every later lean-ctx call from the same shell acts as).",
    ),
    json_: bool = JSON,
) -> None:
    """Register an agent; prints its id and name (like cursor-dev-1).

    The first registration of an id creates its Ed25519 signing key under the data dir
    (keys/<id>.key, mode 0600, and .pub); registering again keeps it. Handoffs it signs are
    trusted by the agents of this log."""
    from ...commands.agents import RegisterAgent
    from ...config import existing_dir

    st = state(ctx)
    if project_root is not None:
        project_root = str(existing_dir(project_root, "--project-root"))
    v = dispatch(
        st,
        RegisterAgent(
            agent_type=agent_type,
            role=role,
            project_root=project_root or st.project_root(),
            agent_id=agent_id or agent_identity(),
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
        if v.key_fingerprint:
            sys.stdout.write(f"key {v.key_fingerprint} ({'new' if v.key_created else 'kept'}, "
                             f"keys/{v.agent_id}.key)\n")
        if v.key_warning:
            sys.stderr.write(f"warning[{v.key_warning.split(':', 1)[0]}]: no signing key recorded: "
                             f"{v.key_warning.split(': ', 1)[-1]}\n")
        if v.agent_id != agent_identity():
            sys.stderr.write(f"to act as this agent: export LEAN_CTX_AGENT_ID={v.agent_id}\n")


@agent_app.command("list")
def list_(
    ctx: typer.Context,
    all_: bool = typer.Option(False, "--all", help="Include agents that deregistered."),
    any_project: bool = typer.Option(False, "--any-project", help="Every project in this log, not only this one."),
    json_: bool = JSON,
) -> None:
    """Agents of this project with their live status (active / idle / stale / left).

    An agent silent for more than 60 s (3 missed heartbeats) is stale; the first listing that
    sees it records its timeout (agent.left, heartbeat_timeout) and it must register again."""
    from ...projections.agents import list_agents

    st = state(ctx)
    lc = st.open()
    now = clock.now()
    scope = None if any_project else st.project_root()
    agents = list_agents(lc.projections.reader("agents"), now=now, project_root=scope, include_left=all_)
    # a read-only log is listed as it is: stale agents show as stale, their timeout is not recorded
    if not lc.store.read_only and any(a.status == "stale" and not a.timed_out for a in agents):
        from ...commands.agents import SweepAgents

        swept = dispatch(st, SweepAgents(project_root=scope, all_projects=scope is None), now=now)
        # re-read: this sweep or a concurrent one recorded the timeouts
        agents = list_agents(lc.projections.reader("agents"), now=now, project_root=scope, include_left=all_)
        if swept.recorded and not st.want_json(json_):
            names = ", ".join(f"{a.name} ({a.agent_id})" for a in swept.recorded)
            sys.stderr.write(f"recorded as timed out (agent.left, heartbeat_timeout): {names}\n")
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



def _agent_ref(st, ref: Optional[str]) -> str:  # type: ignore[no-untyped-def]
    """An agent id from ``ref`` (an id, or a registered name in this project), else the caller."""
    from ...identity import agent_identity
    from ...projections.agents import find_agent

    if ref is None:
        return agent_identity()
    found = find_agent(st.open().projections.reader("agents"), ref, now=clock.now(), project_root=st.project_root())
    return found.agent_id if found is not None else ref


@agent_app.command("budget")
def budget(
    ctx: typer.Context,
    agent: Optional[str] = typer.Argument(None, help="Agent id or name (default: yourself)."),
    set_: Optional[int] = typer.Option(None, "--set", help="Set the budget to N tokens (0 = unlimited)."),
    raise_: Optional[int] = typer.Option(None, "--raise", help="Raise the budget by N tokens."),
    reset: bool = typer.Option(False, "--reset", help="Set the tokens used back to 0 (the budget stays)."),
    json_: bool = JSON,
) -> None:
    """Show an agent's token budget (agent_token_budget) and usage; --set, --raise or --reset it.

    At 80 % tool responses carry a warning; at 100 % reads are refused (BUDGET_EXCEEDED)."""
    from ...commands.budgets import RaiseBudget, ResetBudget, SetBudget
    from ...projections.budgets import budget_view

    st = state(ctx)
    if set_ is not None:
        agent = dispatch(st, SetBudget(agent=agent, limit=set_)).agent_id
    if raise_ is not None:
        agent = dispatch(st, RaiseBudget(agent=agent, by=raise_)).agent_id
    if reset:
        agent = dispatch(st, ResetBudget(agent=agent)).agent_id
    agent_id = _agent_ref(st, agent)
    v = budget_view(st.open().projections.reader("budgets"), agent_id)
    if st.want_json(json_):
        emit_json(v)
        return
    if v.agent_token_budget == 0:
        head = f"budget of {agent_id}: unlimited (agent_token_budget 0); {v.used} tokens used since the last reset"
    else:
        head = (f"budget of {agent_id}: {v.used} of {v.agent_token_budget} tokens used ({v.ratio:.0%}),"
                f" {v.remaining} left [{v.level}]")
    out = [head]
    if v.warning_line:
        out.append(f"  {v.warning_line}")
    for t in v.by_tool:
        out.append(f"  {t.tool}: {t.tokens} tokens in {t.calls} call{'s' if t.calls != 1 else ''}")
    sys.stdout.write("\n".join(out) + "\n")


@agent_app.command("ledger")
def ledger(
    ctx: typer.Context,
    area: Optional[str] = typer.Option(None, "--area", callback=one_of(*LEDGER_AREAS), help="Only this area: tool, tokens (read, cache, knowledge later)."),
    agent: Optional[str] = typer.Option(None, "--agent", hidden=True),
    json_: bool = JSON,
) -> None:
    """Your own context ledger: the tool calls you made and the tokens you spent.

    It is private: an agent only ever sees its own ledger (you are $LEAN_CTX_AGENT_ID, else
    local-<pid of your shell>)."""
    from ...identity import agent_identity
    from ...projections.ledger import ledger_for

    st = state(ctx)
    v = ledger_for(st.open().projections.reader("ledger"), agent_identity(), agent=agent, area=area)
    if st.want_json(json_):
        emit_json(v)
        return
    sys.stdout.write(f"ledger of {v.agent_id}: {v.calls} tool calls ({v.errors} failed, {v.duration_ms:.0f} ms),"
                     f" {v.tokens} tokens\n")
    rows = [to_builtins(e) for e in v.entries]
    for r in rows:
        r["ms"] = f"{r['duration_ms']:.1f}"
        r["last"] = r["last_ts"][:19]
    if rows:
        sys.stdout.write(table(rows, ["area", "item", "count", "errors", "ms", "tokens", "last"]) + "\n")
