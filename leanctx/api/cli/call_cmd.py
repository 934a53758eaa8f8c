"""``lean-ctx call TOOL [ARGS]``: any tool of the registry from the command line.

The same table the MCP server and ``POST /v1/tools/{name}`` serve, so a tool family added to
``leanctx/api/registry.py`` is reachable from the CLI with no code here. ``ARGS`` is a JSON
object (``-`` reads it from stdin); the caller is this process's agent, in this project.

Exit status, as the matching verb would exit: 2 with ``error[CODE]`` (``{"error": {...}}`` with
``--json``) when the tool refuses (unknown tool, bad arguments, any ``LeanCtxError``); and when
the tool answered but what it ran failed, the answer is printed in full and the status says so:
the command's own exit code when the answer carries a non-zero ``exit_code`` (``ctx_shell``, as
``lean-ctx shell``: 124 on a timeout), 1 when it carries ``"ok": false`` (``ctx_proof verify``,
as ``lean-ctx proof verify``). The same holds through ``ctx_call``, whose answer is the inner
tool's. A multi-path ``ctx_read`` with some paths unreadable exits 0, as ``lean-ctx read`` does
(each path's error is in the answer).
"""

from __future__ import annotations

import sys
from typing import Any, Optional

import typer

from .app import state
from .common import JSON
from .render import emit_json, table


def call_cmd(
    ctx: typer.Context,
    tool: Optional[str] = typer.Argument(None, help="The tool (ctx_read, ctx_agent, ...); omit with --list."),
    args: Optional[str] = typer.Argument(None, help="Its arguments as a JSON object ('-': read stdin)."),
    list_: bool = typer.Option(False, "--list", help="List the tools with their category and description."),
    session: Optional[str] = typer.Option(
        None, "--session", help="The conversation (default: $LEAN_CTX_SESSION_ID; none: a conversation of its own)."
    ),
    json_: bool = JSON,
) -> None:
    """Call a tool of the registry (what MCP and HTTP serve) with JSON arguments."""
    import msgspec

    from ...errors import InvalidInput
    from ...identity import agent_identity, session_identity
    from ..registry import Caller, call, tools

    st = state(ctx)
    if list_ or tool is None:
        rows = [{"tool": t.name, "category": t.category, "description": t.description} for t in tools()]
        if st.want_json(json_):
            emit_json(rows)
        else:
            sys.stdout.write(table(rows, ["tool", "category", "description"]) + "\n")
        return
    raw = sys.stdin.read() if args == "-" else (args or "{}")
    try:
        parsed = msgspec.json.decode(raw.encode() if raw.strip() else b"{}")
    except msgspec.DecodeError as exc:
        raise InvalidInput("INVALID_ARGUMENT", f"the arguments must be a JSON object: {exc}") from None
    caller = Caller(agent_id=agent_identity(), session_id=session or session_identity(), project=st.project_root())
    out = call(st.open(), caller, tool, parsed)
    if st.want_json(json_):
        emit_json(out)
    else:
        text = out.get("text") if isinstance(out, dict) else None
        if isinstance(text, str):
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
        else:
            emit_json(out)
    code = answer_exit_code(out)
    if code:
        raise typer.Exit(code)


def answer_exit_code(out: Any) -> int:
    """The exit status for a tool's answer (see the module doc): 0 unless it reports a failure."""
    if not isinstance(out, dict):
        return 0
    if isinstance(out.get("error"), dict):
        return 2
    code = out.get("exit_code")
    if isinstance(code, int) and not isinstance(code, bool) and code != 0:
        return code if 0 < code < 256 else 1
    if out.get("ok") is False:
        return 1
    return 0


def attach(app: typer.Typer) -> None:
    app.command("call")(call_cmd)
