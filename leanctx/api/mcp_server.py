"""The MCP server: the tool registry (``leanctx.api.registry``) over MCP, stdio and streamable HTTP.

``build_server(lc, project=...)`` returns an ``MCPServer`` (mcp 2.x) whose tools are the
registry's rows. It translates only: sessions and identity live in ``mcp_session`` (shared state
in ``mcp_hub.Hub``), tools in the registry, resources and prompts in ``mcp_resources``.

How it plugs into the SDK (public seams only, but one):

- ``initialize`` and ``tools/list`` pass through a server middleware. After the SDK built the
  ``initialize`` result, the session is opened (its agent registered, ``mcp_session``) and the
  result's capabilities are fitted to the client: ``tools.listChanged`` when the session lists
  tools lazily, ``resources`` and ``prompts`` only when the client handles them. ``tools/list``
  answers with the session's loaded categories.
- ``call_tool``, ``list_tools``, ``read_resource``, ``list_resources``, ``get_prompt`` and
  ``list_prompts`` are overridden public methods of ``MCPServer``.
- Per-connection state sits in the SDK's ``Connection.state`` and its ``exit_stack``
  deregisters the agent when the connection closes. mcp 2.3 gives handlers the connection
  only through ``ServerSession._connection`` (the ``Context.connection`` it documents is not
  built by the runner yet): that one private attribute is read in ``_connection``.

Tool results: the registry's ``text`` is the one ``content`` block the model reads. Every result
(errors included) carries the session's call counter in ``_meta["lean-ctx/call"]``. A
``LeanCtxError`` becomes a tool error whose text is ``CODE: sentence`` — what the SDK's
``ToolError`` produces, built here so that it can carry the counter too; an unexpected exception
becomes ``INTERNAL_ERROR`` without its internals (logged on stderr).

No ``structuredContent`` by default. Several clients (Claude Code, Codex, VS Code) hand the
model ``JSON.stringify(structuredContent)`` *instead of* the text whenever it is present, so a
result whose text is a file and whose structured part is its metadata would show the model the
metadata only; and text inside JSON pays for its escaping. Scripts that want the rest of the
registry's mapping (tokens, archive id, ...) ask for it: per call with request
``_meta["lean-ctx/structured"] = true``, or for the whole server with ``LEAN_CTX_MCP_STRUCTURED=1``
(``lean-ctx mcp --structured``). It then has the mapping without ``text`` plus ``call`` (errors:
``{"error": {...}, "call": n}``). The same mapping is what ``/v1/tools`` and ``lean-ctx call
--json`` give.

Exec policy: ``build_server(..., allow_exec=False)`` (``lean-ctx serve --no-exec`` mounting ``/mcp``)
gives every caller ``allow_exec=False``, so the registry refuses calls that run commands or write
files (``HTTP_EXEC_DISABLED``, ``ctx_call`` included), and ``tools/list`` leaves out the tools
that always need exec (``ctx_shell``, ``ctx_edit``).

Cancellation and shutdown: a tool call runs in a worker thread under a cancel event
(``ops.process.cancel_on``). When the call is cancelled (the client's ``notifications/cancelled``,
a closed stream, the server stopping), the event is set, so a command the call runs has its
process group killed at once (exit 130, noted); the handler waits for the thread, so what the call
records (``shell.ran``, its output archived) is written before the cancellation goes on.
Serving it (stdio, streamable HTTP on a port, and what a stop signal does) is ``mcp_serve``.

Requests at the stateless 2026-07-28 protocol (no ``initialize``; the SDK's default client
negotiates it) have no MCP session: they run as one lean-ctx session per client name, listing
every tool (change notifications need ``subscriptions/listen`` there).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import msgspec
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    GetPromptResult,
    PromptMessage,
    TextContent,
    ToolListChangedNotification,
)
from mcp_types import Prompt as MCPPrompt
from mcp_types import PromptArgument as MCPPromptArgument
from mcp_types import Resource as MCPResource
from mcp_types import Tool as MCPTool

from .. import __version__
from ..errors import LeanCtxError
from ..ops.process import cancel_on
from . import mcp_resources as res
from . import mcp_session as ms
from . import registry
from .mcp_hub import Hub
from .mcp_session import McpSession

log = logging.getLogger("leanctx.mcp")

SESSION_KEY = "leanctx.session"
CALL_META = "lean-ctx/call"
SESSION_META = "lean-ctx/session"
EXPECTED_META = "lean-ctx/expected_call"  # request _meta (or argument ``expected_call``): compaction detection
RESUME_META = "lean-ctx/resume"
STRUCTURED_META = "lean-ctx/structured"  # request _meta: this call's result carries structuredContent
STRUCTURED_ENV = "LEAN_CTX_MCP_STRUCTURED"  # "1": every result carries it (module doc)
EXPECTED_ARG = "expected_call"
DEFAULT_HTTP_PORT = 3345
INSTRUCTIONS = ("lean-ctx: compressed project context and multi-agent coordination. Prefer ctx_read, ctx_shell, "
                "ctx_search over plain tools; re-reads of unchanged files return short stubs. Coordinate with "
                "ctx_agent and ctx_task; ctx_load_tools lists more tools.")
NO_EXEC_INSTRUCTIONS = ("lean-ctx: compressed project context and multi-agent coordination. Prefer ctx_read and "
                        "ctx_search over plain tools; re-reads of unchanged files return short stubs. Coordinate "
                        "with ctx_agent and ctx_task; ctx_load_tools lists more tools. This server runs no "
                        "commands and edits no files (started with --no-exec).")
_enc = msgspec.json.Encoder()


def _connection(rc: Any) -> Any:
    """The SDK ``Connection`` of a request (see the module doc), or None."""
    return getattr(getattr(rc, "session", None), "_connection", None)


def _request_context(context: Any) -> Any:
    if context is None:
        return None
    try:
        return context.request_context
    except (ValueError, AttributeError):
        return None


def _dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True) if model is not None else None


@asynccontextmanager
async def _lifespan(server: MCPServer) -> AsyncIterator[dict[str, Any]]:
    assert isinstance(server, LeanCtxMCP)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.hub.heartbeat_loop)
        try:
            yield {}
        finally:
            tg.cancel_scope.cancel()


class LeanCtxMCP(MCPServer):
    """``MCPServer`` serving the registry, per MCP session (see the module doc)."""

    def __init__(self, hub: Hub, *, name: str = "lean-ctx") -> None:
        self.hub = hub
        super().__init__(name=name, version=__version__,
                         instructions=INSTRUCTIONS if hub.allow_exec else NO_EXEC_INSTRUCTIONS, log_level="WARNING",
                         lifespan=_lifespan, middleware=[self._middleware])
        self.calls_running = 0  # tool calls in their worker thread (``mcp_serve`` waits for them on a stop)

    # --- sessions ----------------------------------------------------------------------------
    async def session_for(self, rc: Any) -> McpSession:
        conn = _connection(rc)
        sess = conn.state.get(SESSION_KEY) if conn is not None else None
        if sess is not None:
            await self.hub.ensure_registered(sess)
            return sess
        params = getattr(getattr(rc, "session", None), "client_params", None)
        info = _dump(params.client_info) if params is not None else None
        return await self.hub.envelope_session(info, over_http=getattr(rc, "request", None) is not None)

    async def _on_initialize(self, ctx: Any, result: dict[str, Any]) -> dict[str, Any]:
        params = ctx.params or {}
        conn = _connection(ctx)
        sess = ms.new_session(params.get("clientInfo"), params.get("capabilities"),
                              getattr(conn, "session_id", None))
        await self.hub.open(sess)
        if conn is not None:
            conn.state[SESSION_KEY] = sess
            conn.exit_stack.push_async_callback(self.hub.close, sess)
        caps = dict(result.get("capabilities") or {})
        caps["tools"] = {**(caps.get("tools") or {}), "listChanged": sess.lazy}
        for feature in ("resources", "prompts"):
            if feature not in sess.features:
                caps.pop(feature, None)
        return {**result, "capabilities": caps}

    async def _middleware(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method == "initialize":
            return await self._on_initialize(ctx, await call_next(ctx))
        if ctx.method == "tools/list":
            result = await call_next(ctx)
            sess = await self.session_for(ctx)
            return {**result, "tools": [registry.wire(t) for t in self._tools(sess.loaded())]}
        return await call_next(ctx)

    # --- tools -------------------------------------------------------------------------------
    def _tools(self, categories: Iterable[str] | None = None) -> list[registry.Tool]:
        return registry.tools(categories, allow_exec=self.hub.allow_exec)

    def _caller(self, sess: McpSession) -> registry.Caller:
        """The session's caller under this server's exec policy (module doc)."""
        return dataclasses.replace(sess.caller(self.hub.project), allow_exec=self.hub.allow_exec)

    async def list_tools(self) -> list[MCPTool]:
        """Every tool (``tools/list`` answers per session, through the middleware)."""
        return [MCPTool.model_validate(registry.wire(t)) for t in self._tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> CallToolResult:
        rc = _request_context(context)
        sess = await self.session_for(rc)
        n = sess.tick()
        caller = self._caller(sess)
        args, expected = _expected_call(rc, arguments)
        structured = self.hub.structured or _request_meta(rc).get(STRUCTURED_META) is True
        resume = sess.claim_resume(n, expected, self.hub.gap_threshold)
        if resume:  # the client lost what it was sent: no stub may stand for it from here on
            await self._context_lost(sess, n)
        try:
            out = await self._cancellable(lambda: registry.call(self.hub.lc, caller, name, args))
        except Exception as exc:
            if not isinstance(exc, LeanCtxError):
                log.exception("tool %s failed", name)
                exc = LeanCtxError("INTERNAL_ERROR", f"{name} failed unexpectedly ({type(exc).__name__}); "
                                   "the lean-ctx server log has the details")
            failed = _error(exc, n, sess, structured)
            if resume:  # the gap was seen: the block goes with the error rather than be lost
                await self._add_resume(failed, sess)
            return failed
        if sess.take_changed() and rc is not None:
            await rc.session.send_notification(ToolListChangedNotification(), related_request_id=rc.request_id)
        result = _result(out, n, sess, structured)
        if resume:
            await self._add_resume(result, sess)
        return result

    async def _cancellable(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` in a worker thread; cancelling the call kills the commands it runs and still
        waits for the thread (see the module doc)."""
        cancel = threading.Event()

        def work() -> tuple[Any, Exception | None]:  # its error is raised out here, not in a group
            with cancel_on(cancel):
                try:
                    return fn(), None
                except Exception as exc:  # noqa: BLE001 - re-raised below
                    return None, exc

        async def watch() -> None:
            try:
                await anyio.sleep_forever()
            finally:  # the call was cancelled (or it is over: then this changes nothing)
                cancel.set()

        self.calls_running += 1
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch)
                try:
                    value, error = await anyio.to_thread.run_sync(work)  # not abandoned when cancelled: awaited
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self.calls_running -= 1
        if error is not None:
            raise error
        return value

    async def _context_lost(self, sess: McpSession, call: int) -> None:
        """Record ``session.context_lost`` for the session before the call runs, so a read in
        this very call already sends content (``leanctx.projections.deliveries``)."""
        from ..commands.sessions import MarkContextLost

        try:
            await self.hub.run(self.hub.lc.bus.dispatch, MarkContextLost(reason="compaction", call=call),
                               actor=sess.agent_id, session_id=sess.session_id, project=self.hub.project)
        except Exception:  # the call itself must not fail
            log.warning("could not record the context loss of %s", sess.session_id, exc_info=True)

    async def _add_resume(self, result: CallToolResult, sess: McpSession) -> None:
        """Compaction detected: the session's resume block goes with this answer."""
        from ..commands.sessions import session_of
        from ..resume import build_resume

        try:
            sid = session_of(sess.agent_id, sess.session_id)
            block = await self.hub.run(build_resume, self.hub.lc, sid, sess.agent_id, self.hub.project,
                                       max_tokens=self.hub.resume_max_tokens)
        except Exception:  # the answer itself must not fail
            log.warning("could not build the resume block of %s", sess.session_id, exc_info=True)
            return
        result.content.append(TextContent(type="text", text=block.text))
        if isinstance(result.structured_content, dict):
            result.structured_content["resume"] = block.text
        if result.meta is not None:
            result.meta[RESUME_META] = block.tokens

    # --- resources and prompts ---------------------------------------------------------------
    async def list_resources(self) -> list[MCPResource]:
        return [MCPResource(uri=res.PREFIX + key, name=key, description=about, mime_type="text/plain")
                for key, (about, _) in res.RESOURCES.items()]

    async def read_resource(self, uri: Any, context: Any = None) -> Iterable[ReadResourceContents]:
        key = str(uri).removeprefix(res.PREFIX)
        if not str(uri).startswith(res.PREFIX) or key not in res.RESOURCES:
            raise ResourceNotFoundError(f"Unknown resource: {uri}")
        sess = await self.session_for(_request_context(context))
        fn = res.RESOURCES[key][1]
        try:
            text = await self.hub.run(lambda: fn(self.hub.lc, sess, self.hub.project))
        except LeanCtxError as exc:
            raise ResourceError(f"{exc.code}: {exc.message}") from None
        return [ReadResourceContents(content=text, mime_type="text/plain")]

    async def list_prompts(self) -> list[MCPPrompt]:
        return [MCPPrompt(name=name, description=about,
                          arguments=[MCPPromptArgument(name=a, description=d, required=r) for a, d, r in args])
                for name, (about, args) in res.PROMPTS.items()]

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        sess = await self.session_for(_request_context(context))
        try:
            text = await self.hub.run(lambda: res.prompt_text(name, arguments, self.hub.lc, sess, self.hub.project))
        except LeanCtxError as exc:
            raise MCPError(code=INVALID_PARAMS, message=f"{exc.code}: {exc.message}") from None
        return GetPromptResult(description=res.PROMPTS.get(name, ("",))[0],
                               messages=[PromptMessage(role="user", content=TextContent(type="text", text=text))])


def _expected_call(rc: Any, arguments: dict[str, Any] | None) -> tuple[dict[str, Any] | None, int | None]:
    """The call number the client expects (argument ``expected_call``, else request
    ``_meta["lean-ctx/expected_call"]``); the argument is taken out of the tool's arguments."""
    raw: Any = None
    if isinstance(arguments, dict) and EXPECTED_ARG in arguments:
        arguments = dict(arguments)
        raw = arguments.pop(EXPECTED_ARG)
    if raw is None:
        raw = _request_meta(rc).get(EXPECTED_META)
    try:
        return arguments, (int(raw) if raw is not None and not isinstance(raw, bool) else None)
    except (TypeError, ValueError):
        return arguments, None


def _request_meta(rc: Any) -> dict[str, Any]:
    """The request's ``_meta`` as a mapping (empty when it has none)."""
    meta = getattr(rc, "meta", None) if rc is not None else None
    if meta is not None and not isinstance(meta, dict):
        meta = meta.model_dump(by_alias=True) if hasattr(meta, "model_dump") else None
    return meta if isinstance(meta, dict) else {}


def _meta(n: int, sess: McpSession) -> dict[str, Any]:
    return {CALL_META: n, SESSION_META: sess.session_id}


def _result(out: dict[str, Any], n: int, sess: McpSession, structured: bool) -> CallToolResult:
    text = out.pop("text", None)
    if not isinstance(text, str):
        text = _enc.encode(out).decode()
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content={**out, "call": n} if structured else None, _meta=_meta(n, sess))


def _error(exc: LeanCtxError, n: int, sess: McpSession, structured: bool) -> CallToolResult:
    err = msgspec.to_builtins(exc.to_dict())
    return CallToolResult(content=[TextContent(type="text", text=f"{exc.code}: {exc.message}")], is_error=True,
                          structured_content={"error": err, "call": n} if structured else None,
                          _meta=_meta(n, sess))


# --- building and serving ----------------------------------------------------------------------


def build_server(lc: Any, *, project: str | os.PathLike[str], name: str = "lean-ctx",
                 structured: bool | None = None, allow_exec: bool = True) -> LeanCtxMCP:
    """An MCP server over the log ``lc``: a ``LeanCtx``, a factory returning one (opened on first
    use), or a database path; ``project`` is the project root every tool works in. ``structured``:
    every result carries ``structuredContent`` (module doc); None reads ``LEAN_CTX_MCP_STRUCTURED``.
    ``allow_exec=False``: no call may run commands or write files (module doc)."""
    hub = Hub(lc, project)
    hub.structured = structured_from_env() if structured is None else structured
    hub.allow_exec = allow_exec
    return LeanCtxMCP(hub, name=name)


def structured_from_env() -> bool:
    return os.environ.get(STRUCTURED_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def http_app(server: LeanCtxMCP, *, path: str = "/mcp", host: str = "127.0.0.1", transport_security: Any = None,
             json_response: bool = False) -> Any:
    """A Starlette app serving streamable HTTP MCP at ``path`` (its lifespan runs the sessions).
    On a loopback ``host`` the SDK turns on DNS-rebinding protection (Host/Origin allowlist)."""
    return server.streamable_http_app(streamable_http_path=path, host=host, transport_security=transport_security,
                                      json_response=json_response)


def http_mount(server: LeanCtxMCP, *, path: str = "/mcp", host: str = "127.0.0.1", transport_security: Any = None,
               ) -> tuple[list[Any], Callable[[], AbstractAsyncContextManager[Any]]]:
    """For a host app (``lean-ctx serve``): the Starlette routes serving MCP at ``path``, and the
    lifespan the host must enter (Starlette does not run a mounted app's lifespan):

        routes, mcp_lifespan = http_mount(build_server(lc, project=root))
        app = Starlette(routes=[*api_routes, *routes], lifespan=lambda app: mcp_lifespan())
    """
    app = http_app(server, path=path, host=host, transport_security=transport_security)
    return list(app.routes), server.session_manager.run
