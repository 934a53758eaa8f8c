"""Serving the MCP server (``mcp_server.build_server``): over stdio to one client, or over
streamable HTTP on a loopback port (``lean-ctx mcp [--http]``).

Stopping: ``serve_stdio`` handles SIGTERM, SIGINT and SIGHUP (one the process ignores, as
``nohup``'s SIGHUP, stays ignored). The commands the calls are running are stopped at once
(``ops.process.stop_all``: each call answers with its command terminated, exit 128 + N), the calls
are awaited (at most ``STOP_WAIT_SECONDS``) and their answers written out, whatever still runs is
killed (``kill_all``), and the process then ends by that signal, as it would have without the
handler (a worker thread blocked reading stdin would otherwise hold it). A client that closes the
connection cancels its calls (``mcp_server``: their commands are killed). ``serve_http`` binds its
port first (``PORT_IN_USE``: ``leanctx.api.http.server.listen``) and, asked to exit, stops and
kills the running commands as ``lean-ctx serve`` does.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable

import anyio

from ..ops.process import kill_all, stop_all
from .mcp_server import DEFAULT_HTTP_PORT, LeanCtxMCP, http_app

__all__ = ["LOOPBACK", "serve_http", "serve_stdio"]

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
STOP_WAIT_SECONDS = 10.0  # on a stop signal: how long the calls being answered may take to finish
ANSWER_FLUSH_SECONDS = 0.2  # then, for their answers to be written to stdout


def serve_stdio(server: LeanCtxMCP) -> None:
    """Serve one client on stdin/stdout until it closes the connection or a stop signal comes
    (then the process ends by that signal, its commands stopped first: module doc)."""
    server.hub.client_pid = os.getppid()
    try:
        anyio.run(_serve_stdio, server)
    finally:
        kill_all(None)  # the client left (its calls were cancelled): nothing outlives the server


async def _serve_stdio(server: LeanCtxMCP) -> None:
    async with anyio.create_task_group() as tg:
        if threading.current_thread() is threading.main_thread():  # only there can signals be handled
            tg.start_soon(_stop_on_signal, server)
        await server.run_stdio_async()
        tg.cancel_scope.cancel()


async def _stop_on_signal(server: LeanCtxMCP) -> None:
    """On a stop signal: stop the running commands, let their calls answer, then end the process
    by that signal (stdin may be blocked in a worker thread that no cancellation reaches)."""
    wanted = [s for s in STOP_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]  # nohup's SIGHUP stays ignored
    signum = 0
    with anyio.open_signal_receiver(*wanted) as received:
        async for got in received:
            signum = int(got)
            break
    with anyio.CancelScope(shield=True):
        stop_all(signum)
        deadline = time.monotonic() + STOP_WAIT_SECONDS
        while server.calls_running and time.monotonic() < deadline:
            await anyio.sleep(0.02)
        await anyio.sleep(ANSWER_FLUSH_SECONDS)  # their answers are written out
        await anyio.to_thread.run_sync(kill_all, signum)
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def serve_http(server: LeanCtxMCP, *, host: str = "127.0.0.1", port: int = DEFAULT_HTTP_PORT,
               announce: Callable[[int], None] | None = None) -> None:
    """Serve streamable HTTP MCP alone on ``host:port`` (loopback only: ``lean-ctx serve`` is the
    server for other binds, with its bearer tokens). The port is bound first (``PORT_IN_USE``);
    ``announce(port)`` is then called with the bound port."""
    import uvicorn

    from .http.server import OwningServer, listen

    if host not in LOOPBACK:
        from ..errors import InvalidInput

        raise InvalidInput("MCP_NON_LOOPBACK_BIND", f"lean-ctx mcp --http binds loopback only, not {host!r}; use "
                           "`lean-ctx serve --host ...` (with its bearer token) for other interfaces")
    sockets = listen(host, port)
    if announce is not None:
        announce(int(sockets[0].getsockname()[1]))
    config = uvicorn.Config(http_app(server, host=host), host=host, port=port, log_level="warning",
                            lifespan="on")
    OwningServer(config, owns_process=True).run(sockets=sockets)
