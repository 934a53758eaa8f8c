"""The wiring: one ``LeanCtx`` (store, projections, bus), the agent tokens, the SSE hub, the
timeout sweeper, the route table and the security middleware; and, when the MCP server
module provides one, its streamable-HTTP app at ``/mcp`` (behind the same security).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ... import __version__
from ...app import LeanCtx
from ...config import data_dir
from ...errors import LeanCtxError
from . import a2a, agents, commands, context, dashboard, events, handoff, metrics, openapi, proof, tools
from .config import ServerConfig
from .hub import EventHub
from .ratelimit import TokenBucket
from .responses import JSON, on_http_exception, on_leanctx_error, on_unexpected
from .routes import PUBLIC, RouteSpec
from .security import SecurityMiddleware
from .state import ServerState
from .tokens import SECRET_FILE, AgentTokens, load_secret

log = logging.getLogger("leanctx.http")

async def health(request: Request) -> Response:
    return JSON({"status": "ok", "version": __version__})


HEALTH = RouteSpec("GET", "/health", health, "Liveness (no credentials needed).", "operations", auth=PUBLIC)


def route_specs() -> list[RouteSpec]:
    return [HEALTH, *agents.ROUTES, *events.ROUTES, *commands.ROUTES, *context.ROUTES, *tools.ROUTES,
            *a2a.ROUTES, *handoff.ROUTES, *proof.ROUTES, *dashboard.ROUTES, *metrics.ROUTES, *openapi.ROUTES]


class McpMount:
    """What the MCP server module gives ``lean-ctx serve``: routes and the lifespan to enter."""

    def __init__(self, routes: list[BaseRoute], lifespan: Any) -> None:
        self.routes = routes
        self.lifespan = lifespan  # a callable returning an async context manager, or None


def _mcp(st: ServerState) -> McpMount | None:
    """MCP (streamable HTTP) at ``/mcp``, from ``leanctx.api.mcp_server``: its
    ``build_server(lc, project=..., allow_exec=...)`` (the server's exec policy holds there too) and ``http_mount(server, path=..., host=...,
    transport_security=...)`` (routes + lifespan). The SDK's own Host/Origin check is turned off
    there because ``SecurityMiddleware`` applies the server's allowlist to ``/mcp`` too. None
    (logged) when the module is missing or fails: the rest is served anyway."""
    try:
        from .. import mcp_server  # type: ignore[attr-defined]
    except Exception as exc:  # not there, or broken: serve the rest
        log.info("MCP not mounted at /mcp: leanctx.api.mcp_server cannot be imported (%s)", exc)
        return None
    build, mount = getattr(mcp_server, "build_server", None), getattr(mcp_server, "http_mount", None)
    if not (callable(build) and callable(mount)):
        log.info("MCP not mounted at /mcp: leanctx.api.mcp_server has no build_server/http_mount")
        return None
    try:
        from mcp.server.transport_security import TransportSecuritySettings

        server = build(st.lc, project=st.project_root, allow_exec=st.config.exec_allowed())
        routes, lifespan = mount(server, path="/mcp", host=st.config.host,
                                 transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        return McpMount(list(routes), lifespan)
    except Exception as exc:
        log.warning("MCP not mounted at /mcp: %s: %s", type(exc).__name__, exc)
        return None


def create_app(config: ServerConfig) -> Starlette:
    config.validate()
    secret = load_secret(config.secret_path or data_dir() / SECRET_FILE)
    tokens = AgentTokens(secret, scope=os.path.realpath(config.db))
    lc = LeanCtx(config.db)
    hub = EventHub(lc.store)
    st = ServerState(lc, config, tokens, hub)
    st.metrics = metrics.ToolStats(lc.store)
    specs = route_specs()
    routes: list[BaseRoute] = [Route(s.path, s.endpoint, methods=[s.method], name=f"{s.method} {s.path}")
                               for s in specs]
    mcp = _mcp(st) if config.mount_mcp else None
    if mcp is not None:
        routes += mcp.routes
        st.mcp_mounted = True
        log.info("MCP (streamable HTTP) mounted at /mcp")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        hub.start()
        sweeper = asyncio.create_task(agents.sweeper(st), name="lean-ctx-agent-sweep")
        try:
            async with contextlib.AsyncExitStack() as stack:
                if mcp is not None and mcp.lifespan is not None:
                    await stack.enter_async_context(mcp.lifespan())
                yield
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            hub.stop()
            await asyncio.to_thread(hub.join)
            lc.close()

    rate, burst = config.effective_rate()
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[Middleware(SecurityMiddleware, config=config, tokens=tokens, limiter=TokenBucket(rate, burst))],
        exception_handlers={LeanCtxError: on_leanctx_error, HTTPException: on_http_exception,
                            Exception: on_unexpected},
    )
    app.state.srv = st
    app.state.route_specs = specs
    app.state.openapi = None
    return app
