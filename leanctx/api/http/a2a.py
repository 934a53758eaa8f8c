"""A2A (agent-to-agent): the Agent Card and a JSON-RPC 2.0 endpoint over lean-ctx tasks.

``GET /.well-known/agent.json`` describes this server (skills, auth). ``POST /a2a`` takes
JSON-RPC 2.0 requests:

- ``tasks/send`` ``{id, message: {role, parts: [{type|kind: "text", text}]}, sessionId?, metadata?}``:
  creates the lean-ctx task ``id`` (title: the first line of the text; the rest becomes its
  acceptance criteria) in channel ``metadata.channel`` (default ``a2a``), delegated to
  ``metadata.to_agent`` if given. With ``metadata.claim: true`` the sender also claims it
  (``metadata.lease_seconds``). Sending to an existing task only claims it when asked, else
  answers its state. ``metadata`` holds lean-ctx's options only: a key it does not know (a
  misspelt ``chanel``) is refused (-32602 naming it and the accepted ones), not dropped. A2A's
  own fields elsewhere in ``params`` are accepted and ignored when lean-ctx has no use for them.
- ``tasks/get`` ``{id, metadata?: {channel}}``: the task.
- ``tasks/cancel`` ``{id, metadata?: {channel}}``: its status becomes ``cancelled``.

A2A states: open → ``submitted``, in_progress → ``working``, blocked → ``input-required``,
done → ``completed``, cancelled → ``canceled``. ``send`` and ``cancel`` act as the agent of the
``X-Agent-Token`` (declared in the card's ``securitySchemes``); ``get`` needs none.

Errors are JSON-RPC error objects (HTTP 200): -32700 parse error, -32600 invalid request,
-32601 method not found, -32602 invalid params, -32001 task not found, -32002 task not
cancelable, -32000 any other refusal. ``error.data`` always carries the lean-ctx stable
``code`` and sentence.
"""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from ... import __version__
from ...commands.tasks import ClaimTask, CreateTask, UpdateTask
from ...errors import InvalidInput, LeanCtxError, NotFound
from ...projections.tasks import TaskView, get_task
from .bodies import _is_json, check_fields, decode_json, raw_body
from .responses import JSON, HttpError
from .routes import SERVER, RouteSpec
from .security import agent_of, require_agent
from .state import ServerState, srv
from .tokens import HEADER

A2A_CHANNEL = "a2a"
PROTOCOL_VERSION = "0.2.5"
STATES = {"open": "submitted", "in_progress": "working", "blocked": "input-required", "done": "completed",
          "cancelled": "canceled"}

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
APP_ERROR, TASK_NOT_FOUND, TASK_NOT_CANCELABLE = -32000, -32001, -32002


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


# --- params ----------------------------------------------------------------------------------

class Part(msgspec.Struct, kw_only=True):
    type: str | None = None  # A2A < 0.2
    kind: str | None = None  # A2A >= 0.2
    text: str | None = None


class Message(msgspec.Struct, kw_only=True):
    role: str
    parts: list[Part]


class Options(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """lean-ctx options in ``params.metadata`` (an unknown one is refused)."""

    channel: str = A2A_CHANNEL
    to_agent: str | None = None
    claim: bool = False
    lease_seconds: float = 900.0
    depends_on: list[str] = []
    files_hint: list[str] = []


class SendParams(msgspec.Struct, kw_only=True):
    id: str
    message: Message
    sessionId: str | None = None
    metadata: dict[str, Any] | None = None
    historyLength: int | None = None


class TaskIdParams(msgspec.Struct, kw_only=True):
    id: str
    metadata: dict[str, Any] | None = None
    historyLength: int | None = None


def _params(raw: dict[str, Any], type_: type) -> Any:
    try:
        return msgspec.convert(raw, type_)
    except msgspec.ValidationError as exc:
        raise RpcError(INVALID_PARAMS, f"Invalid params: {exc}",
                       {"code": "INVALID_INPUT", "message": str(exc)}) from None


def _options(metadata: dict[str, Any] | None) -> Options:
    raw = metadata or {}
    try:
        check_fields(raw, Options, "metadata")
    except InvalidInput as err:
        raise RpcError(INVALID_PARAMS, f"Invalid params: {err.message}", err.to_dict()) from None
    return _params(raw, Options)


def a2a_task(view: TaskView, session_id: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"state": STATES.get(view.status, "unknown"), "timestamp": view.updated_at}
    if view.status == "blocked" and view.blocked_reason:
        status["message"] = {"role": "agent", "parts": [{"type": "text", "kind": "text", "text": view.blocked_reason}]}
    return {"kind": "task", "id": view.task_id, "contextId": view.channel, "sessionId": session_id, "status": status,
            "artifacts": [], "metadata": {"leanctx": view}}


def _text_of(msg: Message) -> str:
    texts = [p.text for p in msg.parts if (p.kind or p.type or "text") == "text" and isinstance(p.text, str)]
    text = "\n".join(t for t in texts if t.strip()).strip()
    if not text:
        raise RpcError(INVALID_PARAMS, "Invalid params: the message needs a text part",
                       {"code": "INVALID_INPUT", "message": "tasks/send needs a message with a non-empty text part"})
    return text


def _title_and_acceptance(text: str) -> tuple[str, str | None]:
    """The first line is the title (cut to 200 characters; then the whole text is kept as the
    acceptance criteria), the rest the acceptance criteria (cut to 4000)."""
    first, _, rest = text.partition("\n")
    title = first.strip()
    if len(title) > 200:
        title, rest = title[:197].rstrip() + "...", text
    return title, rest.strip()[:4000] or None


async def _get(st: ServerState, task_id: str, channel: str) -> TaskView:
    view = await st.run(lambda: get_task(st.reader("tasks"), channel, task_id, now=st.now()))
    if view is None:
        raise NotFound("TASK_NOT_FOUND", f"no task {task_id!r} in channel {channel!r}")
    return view


async def tasks_send(st: ServerState, request: Request, raw: dict[str, Any]) -> Any:
    p: SendParams = _params(raw, SendParams)
    opts = _options(p.metadata)
    agent = require_agent(request, st.tokens)
    text = _text_of(p.message)
    existing = await st.run(lambda: get_task(st.reader("tasks"), opts.channel, p.id, now=st.now()))
    if existing is None:
        title, acceptance = _title_and_acceptance(text)
        res = await st.dispatch(request, CreateTask(title=title, task_id=p.id, channel=opts.channel,
                                                    to_agent=opts.to_agent, depends_on=opts.depends_on,
                                                    files_hint=opts.files_hint, acceptance=acceptance), actor=agent,
                                  step="create")
        view = res.value.task
    else:
        view = existing
    if opts.claim:
        res = await st.dispatch(request, ClaimTask(task_id=view.task_id, channel=view.channel,
                                                   lease_seconds=opts.lease_seconds), actor=agent,
                                  step="claim")
        view = res.value.task
    return a2a_task(view, p.sessionId)


async def tasks_get(st: ServerState, request: Request, raw: dict[str, Any]) -> Any:
    p: TaskIdParams = _params(raw, TaskIdParams)
    opts = _options(p.metadata)
    agent_of(request, st.tokens)  # a token, when sent, must be valid
    return a2a_task(await _get(st, p.id, opts.channel))


async def tasks_cancel(st: ServerState, request: Request, raw: dict[str, Any]) -> Any:
    p: TaskIdParams = _params(raw, TaskIdParams)
    opts = _options(p.metadata)
    agent = require_agent(request, st.tokens)
    try:
        res = await st.dispatch(request, UpdateTask(task_id=p.id, channel=opts.channel, status="cancelled",
                                                    reason="cancelled through A2A"), actor=agent)
    except LeanCtxError as err:
        if err.code == "TASK_INVALID_TRANSITION":
            raise RpcError(TASK_NOT_CANCELABLE, "Task cannot be canceled", err.to_dict()) from None
        raise
    return a2a_task(res.value.task)


METHODS = {"tasks/send": tasks_send, "tasks/get": tasks_get, "tasks/cancel": tasks_cancel}


def _rpc_of(err: LeanCtxError) -> RpcError:
    data = {**err.to_dict(), "status": getattr(err, "http_status", 400)}
    if err.code == "TASK_NOT_FOUND" or isinstance(err, NotFound):
        return RpcError(TASK_NOT_FOUND, "Task not found", data)
    if isinstance(err, InvalidInput):
        return RpcError(INVALID_PARAMS, "Invalid params", data)
    return RpcError(APP_ERROR, err.message, data)


def _reply(id_: Any, *, result: Any = None, error: RpcError | None = None) -> JSON:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id_}
    if error is not None:
        err: dict[str, Any] = {"code": error.code, "message": error.message}
        if error.data is not None:
            err["data"] = error.data
        body["error"] = err
    else:
        body["result"] = result
    return JSON(body)


def _valid_id(v: Any) -> bool:
    return v is None or isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))


async def rpc(request: Request) -> Response:
    st = srv(request)
    data = await raw_body(request, st.config.max_body_bytes)
    if not _is_json(request.headers.get("content-type")):
        raise HttpError(415, "HTTP_UNSUPPORTED_MEDIA_TYPE", "send JSON-RPC with `Content-Type: application/json`")
    try:
        msg = decode_json(data)
    except LeanCtxError as err:
        return _reply(None, error=RpcError(PARSE_ERROR, "Parse error", err.to_dict()))
    if not isinstance(msg, dict):
        what = "batch requests are not supported" if isinstance(msg, list) else "a request is a JSON object"
        return _reply(None, error=RpcError(INVALID_REQUEST, "Invalid Request",
                                           {"code": "INVALID_INPUT", "message": what}))
    id_ = msg.get("id")
    if not _valid_id(id_):
        return _reply(None, error=RpcError(INVALID_REQUEST, "Invalid Request",
                                           {"code": "INVALID_INPUT",
                                            "message": "id must be a string, a number or null"}))
    method = msg.get("method")
    if msg.get("jsonrpc") != "2.0" or not isinstance(method, str):
        return _reply(id_, error=RpcError(INVALID_REQUEST, "Invalid Request", {
            "code": "INVALID_INPUT", "message": 'a request needs "jsonrpc": "2.0" and a "method" string'}))
    handler = METHODS.get(method)
    if handler is None:
        return _reply(id_, error=RpcError(METHOD_NOT_FOUND, "Method not found", {
            "code": "A2A_METHOD_NOT_FOUND", "message": f"{method[:100]!r} is not served; use {', '.join(METHODS)}"}))
    params = msg.get("params", {})
    if not isinstance(params, dict):
        return _reply(id_, error=RpcError(INVALID_PARAMS, "Invalid params",
                                          {"code": "INVALID_INPUT", "message": "params must be an object"}))
    try:
        result = await handler(st, request, params)
    except RpcError as err:
        return _reply(id_, error=err) if "id" in msg else Response(status_code=204)
    except LeanCtxError as err:
        return _reply(id_, error=_rpc_of(err)) if "id" in msg else Response(status_code=204)
    if "id" not in msg:  # a notification: no answer
        return Response(status_code=204)
    return _reply(id_, result=result)


def agent_card_dict(base_url: str, secured: bool) -> dict[str, Any]:
    schemes: dict[str, Any] = {"agentToken": {"type": "apiKey", "in": "header", "name": HEADER,
                                              "description": "from POST /v1/agents/register"}}
    security: list[dict[str, list[str]]] = [{"agentToken": []}]
    if secured:
        schemes["bearer"] = {"type": "http", "scheme": "bearer", "description": "the server's token"}
        security = [{"bearer": [], "agentToken": []}]
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "name": "lean-ctx",
        "description": "Context layer for AI coding agents: task delegation with leases, path locks, messages, and"
                       " compressed project context, all recorded in one event log.",
        "url": f"{base_url}/a2a",
        "preferredTransport": "JSONRPC",
        "version": __version__,
        "documentationUrl": f"{base_url}/openapi.json",
        "capabilities": {"streaming": False, "pushNotifications": False, "stateTransitionHistory": False},
        "securitySchemes": schemes,
        "security": security,
        "authentication": {"schemes": [HEADER] + (["Bearer"] if secured else [])},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["application/json"],
        "skills": [{
            "id": "tasks",
            "name": "Task delegation",
            "description": "Create a task for the agents of this project (tasks/send), follow it (tasks/get) and"
                           " cancel it (tasks/cancel). metadata: channel, to_agent, claim, lease_seconds,"
                           " depends_on, files_hint.",
            "tags": ["tasks", "coordination", "leases"],
            "examples": ["Fix the flaky test in tests/test_api.py\nIt fails one run in ten on CI."],
            "inputModes": ["text/plain"],
            "outputModes": ["application/json"],
        }],
    }


async def agent_card(request: Request) -> Response:
    st = srv(request)
    scheme = request.url.scheme
    host = request.headers.get("host") or f"{st.config.host}:{st.config.port}"
    return JSON(agent_card_dict(f"{scheme}://{host}", st.config.token is not None))


TAG = "a2a"
ROUTES = [
    RouteSpec("GET", "/.well-known/agent.json", agent_card, "The A2A Agent Card.", TAG, auth=SERVER),
    RouteSpec("GET", "/.well-known/agent-card.json", agent_card, "The A2A Agent Card (newer path).", TAG, auth=SERVER),
    RouteSpec("POST", "/a2a", rpc, "A2A JSON-RPC 2.0: tasks/send, tasks/get, tasks/cancel.", TAG,
              auth=SERVER, extra={"x-jsonrpc-methods": sorted(METHODS)}),
]
