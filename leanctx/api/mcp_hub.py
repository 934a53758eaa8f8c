"""The ``Hub`` of the MCP server (``leanctx.api.mcp_server``): what every session of one server
shares — the log (opened on first use), the project root, the live sessions — with their
registration, heartbeats and deregistration (``mcp_session``). Split from ``mcp_server``, which
re-exports ``Hub``."""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import anyio

from ..errors import LeanCtxError
from . import mcp_session as ms
from . import registry
from .mcp_session import McpSession

__all__ = ["Hub"]

log = logging.getLogger("leanctx.mcp")


class Hub:
    """What every session of one server shares: the log, the project root, the live sessions."""

    def __init__(self, lc: Any, project: str | os.PathLike[str]) -> None:
        from ..app import LeanCtx

        if isinstance(lc, (str, os.PathLike)):
            path = lc
            self._factory: Callable[[], Any] | None = lambda: LeanCtx(path)
            self._lc = None
        elif callable(lc) and not hasattr(lc, "bus"):
            self._factory, self._lc = lc, None
        else:
            self._factory, self._lc = None, lc
        self.project = os.path.realpath(os.fspath(project))
        self.client_pid: int | None = None  # stdio: the client is our parent process
        self.live: dict[int, McpSession] = {}
        self._by_client: dict[str, McpSession] = {}
        self._lock = threading.Lock()
        self._alock = anyio.Lock()
        from ..resume import gap_threshold_from_env, max_tokens_from_env

        self.gap_threshold = gap_threshold_from_env()
        self.resume_max_tokens = max_tokens_from_env()
        self.structured = False  # every result carries structuredContent (mcp_server's module doc)
        self.allow_exec = True  # calls that run commands or write files (``lean-ctx serve --no-exec``: False)

    @property
    def lc(self) -> Any:
        if self._lc is None:
            with self._lock:
                if self._lc is None:
                    assert self._factory is not None
                    self._lc = self._factory()
        return self._lc

    async def run(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """Run blocking lean-ctx code in a worker thread (the log, the file system, processes)."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kw))

    def _register(self, sess: McpSession) -> None:
        try:
            ms.register(self.lc, sess, self.project, pid=self.client_pid)
        except LeanCtxError as exc:  # the handshake goes on; the first call retries
            log.warning("could not register the agent of %s: %s", sess.client_name or "a client", exc)

    async def open(self, sess: McpSession) -> McpSession:
        await self.run(self._register, sess)
        self.live[id(sess)] = sess
        return sess

    async def close(self, sess: McpSession) -> None:
        self.live.pop(id(sess), None)
        if any(s.agent_id == sess.agent_id for s in self.live.values()):
            return  # another session acts as the same agent ($LEAN_CTX_AGENT_ID): it stays
        try:
            await self.run(ms.deregister, self.lc, sess, self.project)
        except Exception:  # closing must not fail; the heartbeat timeout records it anyway
            log.warning("could not deregister %s", sess.agent_id, exc_info=True)

    async def envelope_session(self, client_info: Any, *, over_http: bool) -> McpSession:
        """The session of requests that come without ``initialize``: one per client name. Over
        stdio that is the one client of this process; over HTTP several clients may share a name,
        so such a session has no lean-ctx session id (never a stub of content another had)."""
        name = str((client_info or {}).get("name") or "")
        async with self._alock:
            sess = self._by_client.get(f"{over_http}:{name}")
            if sess is None:
                sess = ms.new_session(client_info, None, None)
                if over_http:
                    sess.session_id = None
                sess.features = sess.features - {"list_changed"}
                sess.load(list(registry.CATEGORIES))
                sess.take_changed()
                await self.open(sess)
                self._by_client[f"{over_http}:{name}"] = sess
        return sess

    async def ensure_registered(self, sess: McpSession) -> None:
        if not sess.registered:
            await self.run(ms.ensure_registered, self.lc, sess, self.project)

    async def heartbeat_loop(self, interval: float | None = None) -> None:
        from ..projections.agents import HEARTBEAT_INTERVAL

        while True:
            await anyio.sleep(interval or HEARTBEAT_INTERVAL)
            for sess in list(self.live.values()):
                try:
                    await self.run(ms.heartbeat, self.lc, sess, self.project)
                except Exception:
                    log.warning("heartbeat of %s failed", sess.agent_id, exc_info=True)
