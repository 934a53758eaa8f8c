"""Running the app under uvicorn: in the foreground (``lean-ctx serve``) or in a background
thread (tests and benchmarks)."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Self

import uvicorn

from .app import create_app
from .config import ServerConfig


def uvicorn_config(app: Any, config: ServerConfig, log_level: str = "info") -> uvicorn.Config:
    return uvicorn.Config(app, host=config.host, port=config.port, log_level=log_level, lifespan="on",
                          timeout_graceful_shutdown=3, server_header=False, proxy_headers=False,
                          forwarded_allow_ips="", access_log=False)


SSE_CLOSE_GRACE = 1.0  # seconds a stream has, at shutdown, to hand its end to its client

log = logging.getLogger("leanctx.http")


class _Server(uvicorn.Server):
    """Ends the SSE streams first when uvicorn is asked to exit (a signal, or ``should_exit``),
    so that they close cleanly instead of holding up (or being cut by) the graceful shutdown;
    a stream whose client reads nothing cannot take its end, so after ``SSE_CLOSE_GRACE`` its
    connection is aborted (the client sees a reset and may resume with Last-Event-ID)."""

    def __init__(self, config: uvicorn.Config, hub: Any) -> None:
        super().__init__(config)
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


def serve(config: ServerConfig, log_level: str = "info", on_ready: Callable[[int], None] | None = None) -> None:
    """Serve until interrupted (SIGINT / SIGTERM end the SSE streams and shut down).
    ``on_ready(port)`` is called once the socket listens (with the bound port: ``--port 0``)."""
    _log_to_stderr(log_level)
    app = create_app(config)
    server = _Server(uvicorn_config(app, config, log_level), app.state.srv.hub)
    if on_ready is not None:
        def watch() -> None:
            while not server.started:
                if server.should_exit:
                    return
                time.sleep(0.02)
            on_ready(_bound_port(server, config.port))

        threading.Thread(target=watch, name="lean-ctx-ready", daemon=True).start()
    server.run()


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
