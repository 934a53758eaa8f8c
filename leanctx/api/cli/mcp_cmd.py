"""``lean-ctx mcp``: serve the tool registry over MCP (stdio by default; ``--http`` for streamable
HTTP on a loopback port), or print the registry (``--tools``)."""

from __future__ import annotations

import sys

import typer

from .app import state


def mcp_cmd(
    ctx: typer.Context,
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP MCP at /mcp instead of stdio."),
    host: str = typer.Option("127.0.0.1", "--host", help="With --http: the loopback address to bind."),
    port: int = typer.Option(3345, "--port", min=0, max=65535, help="With --http: the port to listen on."),
    tools: bool = typer.Option(False, "--tools", help="Print the tool registry (category, tokens) and exit."),
    structured: bool = typer.Option(
        False, "--structured",
        help="Every result also carries structuredContent (tokens, archive id, ...), for scripts. Off by "
             "default: Claude Code, Codex and VS Code show the model structuredContent instead of the text. "
             "Also $LEAN_CTX_MCP_STRUCTURED=1, or per call request _meta {\"lean-ctx/structured\": true}."),
) -> None:
    """Serve lean-ctx to an MCP client: stdio (what `claude mcp add lean-ctx -- lean-ctx mcp` runs),
    or streamable HTTP with --http. Each client session registers as an agent
    ($LEAN_CTX_AGENT_ID fixes its id) and every tool call runs as that agent, in that session."""
    st = state(ctx)
    if tools:
        _print_tools(st.want_json(False))
        return
    from ..mcp_serve import serve_http, serve_stdio
    from ..mcp_server import build_server

    server = build_server(st.open, project=st.project_root(), structured=True if structured else None)
    if http:
        def announce(bound: int) -> None:  # once the port is bound (a port in use: PORT_IN_USE)
            shown = f"[{host}]" if ":" in host else host
            sys.stderr.write(f"lean-ctx MCP (streamable HTTP) on http://{shown}:{bound}/mcp\n")
            sys.stderr.flush()

        serve_http(server, host=host, port=port, announce=announce)
    else:
        serve_stdio(server)


def _print_tools(as_json: bool) -> None:
    import msgspec

    from ...context.tokens import count_tokens
    from .. import registry

    rows = []
    for t in registry.tools():
        size = count_tokens(msgspec.json.encode(registry.wire(t)).decode())
        rows.append({"name": t.name, "category": t.category, "tokens": size, "description": t.description})
    default = [registry.wire(t) for t in registry.tools(registry.DEFAULT_CATEGORIES)]
    total = count_tokens(msgspec.json.encode({"tools": default}).decode())
    if as_json:
        from .render import emit_json

        emit_json({"tools": rows, "default_categories": list(registry.DEFAULT_CATEGORIES), "default_tokens": total})
        return
    from .render import table

    sys.stdout.write(table(rows, ["name", "category", "tokens", "description"]) + "\n")
    sys.stdout.write(f"default tools/list ({', '.join(registry.DEFAULT_CATEGORIES)}): {total} tokens (o200k)\n")


def attach(app: typer.Typer) -> None:
    app.command("mcp")(mcp_cmd)
