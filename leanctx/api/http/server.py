"""Running the app under uvicorn: in the foreground (``lean-ctx serve``) or in a background
thread (tests and benchmarks).

In the foreground the listening sockets are bound first (``listen``), before the log is opened
or anything is printed, so that a port already taken is the coded error ``PORT_IN_USE`` (naming
the port and a free one to use instead) and any other failure to bind ``HTTP_BIND_FAILED``,
rather than uvicorn's own lines and exit status. ``lean-ctx mcp --http`` binds the same way.

A server in the foreground owns its process: when it is asked to exit (SIGINT, SIGTERM) the
commands its calls are running are stopped at once (``leanctx.ops.process.stop_all``: each run
ends terminated, exit 128 + N, and is recorded so), and whatever still runs when the graceful
shutdown is over is killed (``kill_all``) before the process exits. (An MCP call's answer may not
reach its client then: the SDK's SSE responses end when the server is asked to exit.)"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Self

import uvicorn

from ...errors import CommandError, LeanCtxError
from ...ops.process import kill_all, stop_all
from .app import create_app
from .config import ServerConfig


def uvicorn_config(app: Any, config: ServerConfig, log_level: str = "info") -> uvicorn.Config:
    return uvicorn.Config(app, host=config.host, port=config.port, log_level=log_level, lifespan="on",
                          timeout_graceful_shutdown=3, server_header=False, proxy_headers=False,
                          forwarded_allow_ips="", access_log=False)


SSE_CLOSE_GRACE = 1.0  # seconds a stream has, at shutdown, to hand its end to its client

log = logging.getLogger("leanctx.http")


class OwningServer(uvicorn.Server):
    """A uvicorn server that, with ``owns_process``, stops the commands its calls run when it is
    asked to exit and kills those left when its shutdown is over (see the module doc)."""

    def __init__(self, config: uvicorn.Config, *, owns_process: bool = False) -> None:
        super().__init__(config)
        self.owns_process = owns_process

    def handle_exit(self, sig: int, frame: Any) -> None:
        if self.owns_process:
            stop_all(sig)
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().shutdown(sockets)
        finally:
            if self.owns_process:
                await asyncio.to_thread(kill_all)


class _Server(OwningServer):
    """Ends the SSE streams first when uvicorn is asked to exit (a signal, or ``should_exit``),
    so that they close cleanly instead of holding up (or being cut by) the graceful shutdown;
    a stream whose client reads nothing cannot take its end, so after ``SSE_CLOSE_GRACE`` its
    connection is aborted (the client sees a reset and may resume with Last-Event-ID)."""

    def __init__(self, config: uvicorn.Config, hub: Any, *, owns_process: bool = False) -> None:
        super().__init__(config, owns_process=owns_process)
        self.hub = hub

    def handle_exit(self, sig: int, frame: Any) -> None:
        self.hub.stop()
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.hub.stop()
        drop = asyncio.ensure_future(self._drop_stalled_streams())
        try:
            await super().shutdown(sockets)
        finally:
            drop.cancel()

    async def _drop_stalled_streams(self) -> None:
        await asyncio.sleep(SSE_CLOSE_GRACE)
        dropped = 0
        for conn in list(self.server_state.connections):
            transport = getattr(conn, "transport", None)
            if transport is not None and self.hub.is_streaming_to(getattr(conn, "client", None)):
                transport.abort()
                dropped += 1
        if dropped:
            log.info("closed %d SSE stream(s) whose client read nothing", dropped)


def _log_to_stderr(level: str) -> None:
    """The server's own lines (MCP mounted or not, sweeps, failures) next to uvicorn's."""
    lg = logging.getLogger("leanctx.http")
    if not lg.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
        lg.addHandler(handler)
        lg.propagate = False
    lg.setLevel(level.upper() if level.upper() in logging.getLevelNamesMapping() else "INFO")


def _bind(infos: list[Any], port: int) -> list[socket.socket]:
    """Sockets bound to every address of ``infos`` on ``port`` (0: one free port for all), set
    up as asyncio's ``create_server`` sets its own; an ``OSError`` closes those already bound."""
    socks: list[socket.socket] = []
    try:
        for family, kind, proto, _, addr in infos:
            try:
                sock = socket.socket(family, kind, proto)
            except OSError:  # a family this host lacks (no IPv6): skipped, as asyncio does
                continue
            socks.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((addr[0], port, *addr[2:]))
            port = port or sock.getsockname()[1]
    except OSError:
        for sock in socks:
            sock.close()
        raise
    if not socks:
        raise OSError(errno.EAFNOSUPPORT, "no address family of this host can serve it")
    return socks


def _free_port_near(infos: list[Any], port: int) -> int | None:
    """A port free right now on the same addresses: the next ones after ``port``, else any."""
    for candidate in [*range(port + 1, min(port + 21, 65536)), 0]:
        try:
            socks = _bind(infos, candidate)
        except OSError:
            continue
        found = int(socks[0].getsockname()[1])
        for sock in socks:
            sock.close()
        return found
    return None


def listen(host: str, port: int) -> list[socket.socket]:
    """Bound sockets for ``host:port`` (every address the name has; ``port`` 0: any free one),
    for ``uvicorn.Server.run(sockets=...)``. ``PORT_IN_USE`` when the port is taken (the message
    names a free one), ``HTTP_BIND_FAILED`` for any other reason the address cannot be bound."""
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        infos = list(dict.fromkeys(socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                                      flags=socket.AI_PASSIVE)))
    except socket.gaierror as exc:
        raise LeanCtxError("HTTP_BIND_FAILED", f"cannot listen on {shown}: the host {host!r} is unknown here "
                           f"({exc.strerror}); give --host an address of this machine, e.g. 127.0.0.1",
                           host=host, port=port) from None
    try:
        return _bind(infos, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            free = _free_port_near(infos, port)
            instead = f"--port {free} (free now)" if free else "another --port"
            raise CommandError("PORT_IN_USE", f"port {port} on {host} is already in use (another lean-ctx server, "
                               f"or another program); choose {instead}, or --port 0 for any free port",
                               host=host, port=port, **({"free_port": free} if free else {})) from None
        raise LeanCtxError("HTTP_BIND_FAILED", f"cannot listen on {shown}: {exc.strerror or exc}; choose another "
                           "--host or --port", host=host, port=port) from None


def serve(config: ServerConfig, log_level: str = "info", on_ready: Callable[[int], None] | None = None,
          announce: Callable[[int], None] | None = None) -> None:
    """Serve until interrupted (SIGINT / SIGTERM end the SSE streams and the commands being run,
    and shut down). The sockets are bound first (``listen``: ``PORT_IN_USE``); ``announce(port)``
    is called then, before the log is opened, and ``on_ready(port)`` once the server accepts
    connections (both with the bound port: ``--port 0``)."""
    sockets = listen(config.host, config.port)
    port = int(sockets[0].getsockname()[1])
    if announce is not None:
        announce(port)
    _log_to_stderr(log_level)
    try:
        app = create_app(config)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    server = _Server(uvicorn_config(app, config, log_level), app.state.srv.hub, owns_process=True)
    if on_ready is not None:
        def watch() -> None:
            while not server.started:
                if server.should_exit:
                    return
                time.sleep(0.02)
            on_ready(port)

        threading.Thread(target=watch, name="lean-ctx-ready", daemon=True).start()
    server.run(sockets=sockets)


def _bound_port(server: uvicorn.Server, default: int) -> int:
    for s in server.servers:
        for sock in s.sockets:
            return int(sock.getsockname()[1])
    return default


class BackgroundServer:
    """The app on a real uvicorn in a thread: ``with BackgroundServer(cfg) as s: httpx.get(s.url)``."""

    def __init__(self, config: ServerConfig, log_level: str = "warning") -> None:
        self.config = config
        self.app = create_app(config)
        self.server = _Server(uvicorn_config(self.app, config, log_level), self.app.state.srv.hub)
        self.thread = threading.Thread(target=self.server.run, name="lean-ctx-http", daemon=True)

    @property
    def state(self) -> Any:
        return self.app.state.srv

    @property
    def port(self) -> int:
        return _bound_port(self.server, self.config.port)

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.port}"

    def start(self, timeout: float = 10.0) -> Self:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the HTTP server did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True  # the shutdown ends the SSE streams first
        self.thread.join(timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
