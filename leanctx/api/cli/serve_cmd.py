"""``lean-ctx serve``: the HTTP API (REST, SSE, A2A, metrics; MCP at /mcp when available)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from .app import state


def serve_cmd(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (beyond loopback a --token is required)."),
    port: int = typer.Option(3344, "--port", help="Port to bind (0: any free port)."),
    token: Optional[str] = typer.Option(
        None, "--token", envvar="LEAN_CTX_HTTP_TOKEN", show_envvar=True,
        help="Bearer token every route but /health then requires (at least 16 characters).",
    ),
    allow_host: List[str] = typer.Option(
        [], "--allow-host", help="Another Host name clients may use (repeatable; e.g. behind a proxy)."
    ),
    rate_limit: Optional[float] = typer.Option(
        None, "--rate-limit", help="Requests per second per client (0: off; default: off on loopback, 50 beyond)."
    ),
    burst: Optional[int] = typer.Option(None, "--burst", help="Requests a client may save up (default: 2 × rate)."),
    allow_exec: Optional[bool] = typer.Option(
        None, "--allow-exec/--no-exec",
        help="Serve the shell and edit routes (default: yes on loopback, no beyond).",
    ),
    mcp: bool = typer.Option(True, "--mcp/--no-mcp", help="Mount the MCP server (streamable HTTP) at /mcp."),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn log level: debug, info, warning, error."),
) -> None:
    """Serve the HTTP API: agents, the log over SSE, commands, A2A, /health, /metrics, /openapi.json."""
    from ...config import db_path
    from ..http.config import ServerConfig

    st = state(ctx)
    root = st.project_root()
    db = db_path(st.db, root=None if st.db else Path(root))
    config = ServerConfig(db=db, project_root=root, host=host, port=port, token=token or None,
                          allowed_hosts=tuple(allow_host), rate=rate_limit, burst=burst, allow_exec=allow_exec,
                          mount_mcp=mcp)
    config.validate()  # refuse before importing the server or opening the log
    from ..http.server import serve

    shown = f"[{host}]" if ":" in host else host
    sys.stderr.write(f"lean-ctx serving http://{shown}:{port} (log {db}, project {root}"
                     f"{', bearer token required' if config.token else ''}); Ctrl-C stops\n")
    sys.stderr.flush()
    serve(config, log_level=log_level.lower())


def attach(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
