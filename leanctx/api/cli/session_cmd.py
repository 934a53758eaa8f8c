"""``lean-ctx session ...`` (task, findings, decisions, snapshots, the resume block and the
PreCompact hook), ``lean-ctx overview [TASK]`` and ``lean-ctx hooks precompact``.

The verbs go through the tool registry (``ctx_session``, ``ctx_overview``) as this process's
agent (``$LEAN_CTX_AGENT_ID``) in its session (``$LEAN_CTX_SESSION_ID``, else
``default-<agent>``)."""

from __future__ import annotations

import sys
from typing import Any

import typer

from .app import state
from .common import JSON
from .groups import hooks_app
from .render import emit_json

session_app = typer.Typer(
    help="Your session: task (step i/n), findings, decisions, snapshots, the resume block.", no_args_is_help=True
)
SESSION_OPT = typer.Option(None, "--session", "-s", help="The session (default: $LEAN_CTX_SESSION_ID, else default-<agent>).")


def attach(app: typer.Typer) -> None:
    app.add_typer(session_app, name="session")
    app.command("overview")(overview_cmd)


def _caller(st: Any, session: str | None = None) -> Any:
    from ...identity import agent_identity, session_identity
    from ..registry import Caller

    return Caller(agent_identity(), session or session_identity(), st.project_root())


def _run(ctx: typer.Context, name: str, args: dict[str, Any], json_: bool, session: str | None = None) -> dict[str, Any]:
    from ..registry import call

    st = state(ctx)
    out = call(st.open(), _caller(st, session), name, {k: v for k, v in args.items() if v is not None})
    if st.want_json(json_):
        emit_json({k: v for k, v in out.items()})
    else:
        sys.stdout.write(str(out.get("text", "")) + "\n")
    return out


@session_app.command("status")
def status(ctx: typer.Context, session: str | None = SESSION_OPT, json_: bool = JSON) -> None:
    """The session's task, findings, decisions, file refs and archives."""
    _run(ctx, "ctx_session", {"action": "status", "session": session}, json_)


@session_app.command("task")
def task(ctx: typer.Context, text: str | None = typer.Argument(None, help="The task (omit to move the step)."),
         step: int | None = typer.Option(None, "--step", help="Step i of --total."),
         total: int | None = typer.Option(None, "--total", help="Number of steps."), json_: bool = JSON) -> None:
    """Set the session's task and step i/n."""
    _run(ctx, "ctx_session", {"action": "task", "task": text, "step": step, "total": total}, json_)


@session_app.command("finding")
def finding(ctx: typer.Context, text: str = typer.Argument(..., help="What you found."),
            path: str | None = typer.Option(None, "--path", help="The file it is about."), json_: bool = JSON) -> None:
    """Note a finding in the session."""
    _run(ctx, "ctx_session", {"action": "finding", "text": text, "path": path}, json_)


@session_app.command("decision")
def decision(ctx: typer.Context, text: str = typer.Argument(..., help="What you decided."),
             path: str | None = typer.Option(None, "--path", help="The file it is about."),
             json_: bool = JSON) -> None:
    """Note a decision in the session."""
    _run(ctx, "ctx_session", {"action": "decision", "text": text, "path": path}, json_)


@session_app.command("save")
def save(ctx: typer.Context, name: str | None = typer.Argument(None, help="Snapshot name (default: the session id)."),
         json_: bool = JSON) -> None:
    """Save the session's state under a name."""
    _run(ctx, "ctx_session", {"action": "save", "name": name}, json_)


@session_app.command("load")
def load(ctx: typer.Context, name: str = typer.Argument(..., help="A saved snapshot."), json_: bool = JSON) -> None:
    """Replace the session's task, findings and decisions with a saved snapshot."""
    _run(ctx, "ctx_session", {"action": "load", "name": name}, json_)


@session_app.command("reset")
def reset(ctx: typer.Context, json_: bool = JSON) -> None:
    """Clear the session's task, findings and decisions."""
    _run(ctx, "ctx_session", {"action": "reset"}, json_)


@session_app.command("list")
def list_(ctx: typer.Context, json_: bool = JSON) -> None:
    """Sessions and saved snapshots of this project, newest first."""
    _run(ctx, "ctx_session", {"action": "list"}, json_)


@session_app.command("diff")
def diff(ctx: typer.Context, name: str = typer.Argument(..., help="A snapshot name or a session id."),
         session: str | None = SESSION_OPT, json_: bool = JSON) -> None:
    """What changed in the session since a snapshot (or compared with another session)."""
    _run(ctx, "ctx_session", {"action": "diff", "name": name, "session": session}, json_)


@session_app.command("resume")
def resume(ctx: typer.Context, session: str | None = SESSION_OPT,
           max_tokens: int | None = typer.Option(None, "--max-tokens", min=60,
                                                    help="Token budget (default $LEAN_CTX_RESUME_MAX_TOKENS or 500)."),
           json_: bool = JSON) -> None:
    """The resume block: what a compacted context needs back."""
    _run(ctx, "ctx_session", {"action": "resume", "session": session, "max_tokens": max_tokens}, json_)


def _hook_session() -> str | None:
    """``session_id`` from a hook's JSON on stdin (Claude Code PreCompact), if any arrives."""
    import json
    import select

    try:
        if sys.stdin is None or sys.stdin.isatty():
            return None
        ready, _, _ = select.select([sys.stdin], [], [], 0.2)
        if not ready:
            return None
        data = json.loads(sys.stdin.read() or "{}")
    except (OSError, ValueError):
        return None
    sid = data.get("session_id") if isinstance(data, dict) else None
    return str(sid) if sid else None


def precompact(ctx: typer.Context, session: str | None = SESSION_OPT,
               max_tokens: int | None = typer.Option(None, "--max-tokens", min=60, help="Token budget."),
               json_: bool = JSON) -> None:
    """PreCompact hook: write the resume block to <data dir>/sessions/<session>/resume.md, and
    record that the conversation loses what it was sent (no stubs for it afterwards), with the
    MCP conversations of the client that runs the hook (``leanctx.compaction_hook``)."""
    from ...commands.sessions import MarkContextLost, session_of
    from ...identity import agent_identity, session_identity
    from ...resume import build_resume, write_resume

    st = state(ctx)
    agent = agent_identity()
    sid = session or session_identity() or _hook_session() or session_of(agent, None)
    lc = st.open()
    block = build_resume(lc, sid, agent, st.project_root(), max_tokens=max_tokens)
    path = write_resume(block)
    from ...clock import now as clock_now
    from ...compaction_hook import client_conversations

    lost = [(agent, sid), *client_conversations(lc, st.project_root(), now=clock_now())]
    for who, conv in dict.fromkeys(lost):  # the hook's conversation, and its client's MCP ones
        lc.bus.dispatch(MarkContextLost(reason="precompact"), actor=who, session_id=conv, project=st.project_root())
    if st.want_json(json_):
        emit_json({"path": str(path), "session_id": sid, "tokens": block.tokens, "left_out": block.left_out})
    else:
        sys.stdout.write(f"resume block of {sid} ({block.tokens} tokens) written to {path}\n")


session_app.command("precompact")(precompact)
hooks_app.command("precompact")(precompact)


def overview_cmd(ctx: typer.Context, task: str | None = typer.Argument(None, help="What you are about to do."),
                 max_tokens: int | None = typer.Option(None, "--max-tokens", min=100, help="Token budget."),
                 json_: bool = JSON) -> None:
    """Wake-up briefing: live agents, tasks, unread messages, locks, claims, diary, your resume block."""
    _run(ctx, "ctx_overview", {"task": task, "max_tokens": max_tokens}, json_)
