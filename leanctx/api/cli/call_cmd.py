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
tool's. A multi-path ``ctx_read`` with some paths unreadable exits 2, as ``lean-ctx read`` does,
after printing the whole answer (each path's error is in it).

With ``--json`` the answer of ``ctx_read``, ``ctx_expand`` and ``ctx_shell`` (also called through
``ctx_call``) stays within the answer cap as ``lean-ctx --json read / expand / shell`` do
(``leanctx.api.cli.json_cap``): the tool is asked for a text cap lowered by the escaping's cost
(measured on the files or the archive; assumed for a command's output), and when the JSON printed
still exceeds the cap a ``warning[JSON_OVER_CAP]`` line on stderr says by how much. Other tools' answers (``ctx_search``, ``ctx_tree``: listings of paths, of small
escaping cost) are printed as they are.
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
    from ..tools.context import encoding_of

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
    lc = st.open()
    json_cap = None
    if st.want_json(json_):
        out, json_cap = _json_call(st, lc, caller, tool, parsed)
    else:
        out = call(lc, caller, tool, parsed)
    if json_cap is not None:
        from .json_cap import emit_capped

        emit_capped([out], json_cap, encoding_of(caller))
    elif st.want_json(json_):
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


_CAPPED_TOOLS = ("ctx_read", "ctx_expand", "ctx_shell")


def _usable(cap: Any) -> bool:
    from ...commands.read import MAX_CAP_TOKENS, MIN_CAP_TOKENS

    return isinstance(cap, int) and not isinstance(cap, bool) and MIN_CAP_TOKENS <= cap <= MAX_CAP_TOKENS


def _json_call(st: Any, lc: Any, caller: Any, tool: str, args: Any) -> tuple[Any, int | None]:
    """(the answer, the cap of its JSON or None) of ``tool`` called with ``--json``: the tools
    of ``_CAPPED_TOOLS`` are asked for a text cap that leaves room for the JSON escaping."""
    from ..registry import call

    inner, inner_args = tool, args
    if tool == "ctx_call" and isinstance(args, dict) and isinstance(args.get("args", {}), dict):
        inner, inner_args = args.get("name"), dict(args.get("args") or {})
    if inner not in _CAPPED_TOOLS or not isinstance(inner_args, dict):
        return call(lc, caller, tool, args), None
    from ..tools.context import encoding_of

    enc = encoding_of(caller)
    from .json_cap import text_cap

    capped = dict(inner_args)
    json_cap: int | None = None
    if inner == "ctx_shell":  # the output is not seen yet: ``SHELL_JSON_RATIO``
        from ...commands.read import DEFAULT_CAP_TOKENS

        given, target = capped.get("max_tokens"), capped.get("command", capped.get("argv"))
        if given is None or _usable(given):
            json_cap = given if given is not None else DEFAULT_CAP_TOKENS
            shown = target if isinstance(target, str) else " ".join(map(str, target or []))
            capped["max_tokens"] = text_cap(json_cap, encoding=enc, sources=None, extra=[shown])
    elif inner == "ctx_read":
        from .read_cmd import _json_cap

        paths = capped.get("paths")
        if isinstance(paths, list) and paths and all(isinstance(p, str) for p in paths) and (
                capped.get("max_tokens") is None or _usable(capped.get("max_tokens"))):
            capped["max_tokens"], json_cap = _json_cap(st, paths, capped.get("max_tokens"), enc)
    else:  # ctx_expand
        from ...commands.read import DEFAULT_CAP_TOKENS
        from .shell_cmd import _archive_text

        aid, given = capped.get("archive_id"), capped.get("max_tokens")
        if isinstance(aid, str) and (given is None or _usable(given)):
            json_cap = given if given is not None else DEFAULT_CAP_TOKENS
            capped["max_tokens"] = text_cap(json_cap, encoding=enc, sources=_archive_text(lc, aid), extra=[aid])
    if json_cap is None:  # arguments the tool refuses (or a cap it judges): as given
        return call(lc, caller, tool, args), None
    if tool == "ctx_call":
        return call(lc, caller, tool, {**args, "args": capped}), json_cap
    return call(lc, caller, tool, capped), json_cap


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
    files = out.get("files")
    if isinstance(files, list) and any(isinstance(f, dict) and isinstance(f.get("error"), dict) for f in files):
        return 2  # a multi-path read that answered some paths with an error, as lean-ctx read exits
    return 0


def attach(app: typer.Typer) -> None:
    app.command("call")(call_cmd)
