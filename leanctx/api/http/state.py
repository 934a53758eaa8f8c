"""What every handler reaches through ``request.app.state.srv``: the open log, the config,
the agent tokens, the SSE hub, and helpers to run blocking work off the event loop."""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from starlette.requests import Request

from ...app import LeanCtx
from ...commands.bus import Command, DispatchResult
from ...errors import InvalidInput
from .config import ServerConfig
from .hub import EventHub
from .tokens import AgentTokens

T = TypeVar("T")

SERVER_ACTOR = "lean-ctx-http"  # the actor of what the server does on its own (timeout sweeps)
_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")
_SESSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


class ServerState:
    def __init__(self, lc: LeanCtx, config: ServerConfig, tokens: AgentTokens, hub: EventHub) -> None:
        self.lc = lc
        self.config = config
        self.tokens = tokens
        self.hub = hub
        self.project_root = config.project_root
        self.mcp_mounted = False
        self.metrics: Any = None  # ToolStats, set by the app
        self.register_lock = asyncio.Lock()  # explicit new agent ids: check and register as one step

    def now(self) -> float:
        return self.config.clock()

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in a worker thread (the store blocks)."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

    def reader(self, *names: str) -> Any:
        """(In a worker thread.) A read connection on which ``names`` are current."""
        self.lc.projections.ensure_current(list(names) if names else None)
        return self.lc.store.read_connection()

    async def dispatch(self, request: Request, command: Command, *, actor: str | None,
                       step: str | None = None) -> DispatchResult:
        """Dispatch ``command`` as ``actor`` in the server's project, at the server's clock.

        ``Idempotency-Key`` is scoped to the actor (one agent's key never answers another's
        request) and refused without one (``HTTP_IDEMPOTENCY_KEY_NEEDS_AGENT``: an anonymous
        retry could otherwise fetch someone else's answer). ``step`` tells apart the several
        dispatches one request makes (A2A send = create + claim). A key stands for one command:
        reused for another, the bus refuses it (``422 IDEMPOTENCY_KEY_REUSED``)."""
        key = request.headers.get("idempotency-key")
        if key is not None:
            if not _KEY.match(key):
                raise InvalidInput("HTTP_INVALID_IDEMPOTENCY_KEY",
                                   "Idempotency-Key must be 1-200 printable ASCII characters without spaces")
            if not actor:
                raise InvalidInput("HTTP_IDEMPOTENCY_KEY_NEEDS_AGENT",
                                   "Idempotency-Key is only honoured for an agent acting with its X-Agent-Token;"
                                   " send the request without it")
            key = f"http:{actor}:{key}" + (f"#{step}" if step else "")
        session = session_of(request)
        # the server's clock, read by the bus once it holds the write lock (not before waiting for it)
        return await self.run(self.lc.bus.dispatch, command, actor=actor, session_id=session,
                              project=self.project_root, now=self.config.clock, idempotency_key=key)


def session_of(request: Request) -> str | None:
    """The conversation named by ``X-Session-Id`` (stubs for unchanged re-reads are per session)."""
    session = request.headers.get("x-session-id")
    if session is not None and not _SESSION.match(session):
        raise InvalidInput("HTTP_INVALID_SESSION", "X-Session-Id must be 1-128 letters, digits, '.', '_', ':' or '-'")
    return session


def srv(request: Request) -> ServerState:
    return request.app.state.srv  # type: ignore[no-any-return]


def envelope(res: DispatchResult) -> dict[str, Any]:
    """What a command route answers: the command's result and where it landed in the log."""
    return {"result": res.value, "correlation_id": res.correlation_id, "call_position": res.call_position,
            "positions": res.positions, "duplicate": res.duplicate}
