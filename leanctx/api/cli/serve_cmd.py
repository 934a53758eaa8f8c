"""``lean-ctx serve``: the HTTP API (REST, SSE, A2A, metrics; MCP at /mcp when available) and the
dashboard at ``/``; ``lean-ctx dashboard [--open]``: the same server, its address printed (and opened)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, List, Optional

import typer

from .app import state


HOST = typer.Option("127.0.0.1", "--host", help="Address to bind (beyond loopback a --token is required).")
TOKEN = typer.Option(
    None, "--token", envvar="LEAN_CTX_HTTP_TOKEN", show_envvar=True,
    help="Bearer token every route but /health and the dashboard's static files then requires (16+ characters).",
)
ALLOW_HOST = typer.Option([], "--allow-host", help="Another Host name clients may use (repeatable; e.g. behind a proxy).")
RATE = typer.Option(None, "--rate-limit", help="Requests per second per client (0: off; default: off on loopback, 50 beyond).")
BURST = typer.Option(None, "--burst", help="Requests a client may save up (default: 2 × rate).")
EXEC = typer.Option(None, "--allow-exec/--no-exec", help="Serve the shell and edit routes (default: yes on loopback, no beyond).")
MCP = typer.Option(True, "--mcp/--no-mcp", help="Mount the MCP server (streamable HTTP) at /mcp.")
LOG_LEVEL = typer.Option("info", "--log-level", help="uvicorn log level: debug, info, warning, error.")


def _config(ctx: typer.Context, host: str, port: int, token: Optional[str], allow_host: List[str],
            rate_limit: Optional[float], burst: Optional[int], allow_exec: Optional[bool], mcp: bool) -> Any:
    from ...config import db_path
    from ..http.config import ServerConfig

    st = state(ctx)
    root = st.project_root()
    db = db_path(st.db, root=None if st.db else Path(root))
    config = ServerConfig(db=db, project_root=root, host=host, port=port, token=token or None,
                          allowed_hosts=tuple(allow_host), rate=rate_limit, burst=burst, allow_exec=allow_exec,
                          mount_mcp=mcp)
    config.validate()  # refuse before importing the server or opening the log
    return config


def _url(config: Any, port: int | None = None) -> str:
    host = config.host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{config.port if port is None else port}"


def _run(config: Any, log_level: str, what: str, on_ready: Optional[Callable[[int], None]] = None) -> None:
    """Serve; a port already in use is ``PORT_IN_USE`` (``http.server.listen``), before anything is printed."""
    from ..http.server import serve

    def announce(port: int) -> None:
        sys.stderr.write(f"lean-ctx serving {what} at {_url(config, port)} (log {config.db}, project "
                         f"{config.project_root}{', bearer token required' if config.token else ''}); Ctrl-C stops\n")
        sys.stderr.flush()

    serve(config, log_level=log_level.lower(), on_ready=on_ready, announce=announce)


def serve_cmd(
    ctx: typer.Context,
    host: str = HOST,
    port: int = typer.Option(3344, "--port", min=0, max=65535, help="Port to bind (0: any free port)."),
    token: Optional[str] = TOKEN,
    allow_host: List[str] = ALLOW_HOST,
    rate_limit: Optional[float] = RATE,
    burst: Optional[int] = BURST,
    allow_exec: Optional[bool] = EXEC,
    mcp: bool = MCP,
    log_level: str = LOG_LEVEL,
) -> None:
    """Serve the HTTP API (agents, the log over SSE, commands, A2A, /health, /metrics, /openapi.json) and the dashboard at /."""
    config = _config(ctx, host, port, token, allow_host, rate_limit, burst, allow_exec, mcp)
    _run(config, log_level, "the HTTP API and the dashboard")


def dashboard_cmd(
    ctx: typer.Context,
    host: str = HOST,
    port: int = typer.Option(3344, "--port", min=0, max=65535, help="Port to bind (0: any free port)."),
    open_: bool = typer.Option(False, "--open", help="Open the dashboard in the default browser once it is up."),
    token: Optional[str] = TOKEN,
    allow_host: List[str] = ALLOW_HOST,
    allow_exec: Optional[bool] = EXEC,
    mcp: bool = MCP,
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level: debug, info, warning, error."),
) -> None:
    """Serve the dashboard (and the whole HTTP API) and print its address; --open opens it in a browser.

    With a --token the printed address carries it in the fragment (#token=...), which the page
    keeps for its requests and browsers never send to a server."""
    config = _config(ctx, host, port, token, allow_host, None, None, allow_exec, mcp)
    opened: list[Path] = []

    def ready(bound: int) -> None:
        url = dashboard_url(_url(config, bound), config.token)
        sys.stdout.write(f"dashboard: {url}\n")
        sys.stdout.flush()
        if open_:
            import webbrowser

            target = browser_target(url, config.token, opened)
            if not webbrowser.open(target):
                sys.stderr.write("no browser could be opened here; open the address above\n")

    try:
        _run(config, log_level, "the dashboard", on_ready=ready)
    finally:
        for f in opened:
            f.unlink(missing_ok=True)


def dashboard_url(base: str, token: Optional[str]) -> str:
    """The page's address; with a token, in the fragment, percent-encoded (a token may hold
    ``+``, ``&``, ``#`` or ``%``, which a fragment would otherwise change or cut)."""
    from urllib.parse import quote

    return base + "/" + (f"#token={quote(token, safe='')}" if token else "")


def browser_target(url: str, token: Optional[str], made: list[Path]) -> str:
    """What to hand the browser: the address itself without a token; with one, a private (0600)
    file that redirects to it, so the token is not on the browser's command line, which every
    local user can read (``ps``). The file is listed in ``made`` and removed when serving ends."""
    if not token:
        return url
    import html
    import os
    import tempfile

    fd, name = tempfile.mkstemp(prefix="lean-ctx-dashboard-", suffix=".html")  # 0600
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write('<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
                f'<meta http-equiv="refresh" content="0; url={html.escape(url, quote=True)}">'
                f'<title>lean-ctx dashboard</title><a href="{html.escape(url, quote=True)}">open the dashboard</a>\n')
    made.append(Path(name))
    return Path(name).as_uri()


def attach(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
    app.command("dashboard")(dashboard_cmd)
