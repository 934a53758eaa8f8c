"""The remote agent bus: register, heartbeat, list, deregister, and the roster's SSE stream.

Registration answers with the agent's token (see ``tokens``); heartbeat and deregister act as
the agent that token proves. Re-registering an id the log already knows (a rejoin, or taking
over an id used from the CLI) needs that id's token (``403 AUTH_AGENT_ID_TAKEN``), so nobody
obtains another agent's token by naming it. Each registration answers a fresh token, bound to
it: the previous one is refused from then on, and once the agent leaves (deregisters, or its
timeout is recorded) its token acts no more (``401 AUTH_AGENT_TOKEN_REVOKED``, see
``security``) except here, in the agent's own lifecycle: register again with it (a rejoin, the
one way back), heartbeat (the registry answers ``409 AGENT_LEFT``) and deregister (a no-op). The ``agent.register`` command decides this in its
write transaction (``new_only``), so a refused caller appends no ``agent.registered``, also when
several servers share the log. An id that is another agent's name is refused for everyone
(``409 AGENT_ID_TAKEN``, see ``leanctx.commands.agents``). Registering gives the agent its Ed25519 signing key
in this server's data dir (created once, by the ``agent.register`` command; see
``leanctx.commands.agents``); the answer names its fingerprint (``key_fingerprint``).

``GET /v1/agents/events`` streams ``agent_joined`` (``agent.registered``) and ``agent_left``
(``agent.left`` with reason ``heartbeat_timeout`` after 3 missed heartbeats, or
``agent.deregistered`` with the agent's reason). The server records timeouts itself: every
``sweep_interval`` it looks for agents stale at the server's clock and, when there is one,
dispatches ``agent.sweep`` (nothing is appended when nobody is stale).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import msgspec
from sse_starlette.event import ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response

from ...commands.agents import (
    AGENT_ID_TAKEN,
    AgentAck,
    Deregister,
    Heartbeat,
    RegisterAgent,
    SweepAgents,
    acted_since,
)
from ...errors import LeanCtxError
from ...events import StoredEvent, TopicFilter
from ...events.codec import payload_dict
from ...projections.agents import (
    HEARTBEAT_INTERVAL,
    HEARTBEAT_TTL,
    AgentView,
    find_agent,
    list_agents,
    unrecorded_stale,
)
from . import sse
from .bodies import convert, json_body, q_bool, q_str
from .responses import JSON, HttpError
from .routes import AGENT, SERVER, Param, RouteSpec
from .security import agent_of, mismatch, require_agent
from .state import SERVER_ACTOR, ServerState, srv
from .tokens import HEADER

log = logging.getLogger("leanctx.http")

ROSTER_KINDS = ("agent.registered", "agent.left", "agent.deregistered")


class RegisterBody(msgspec.Struct, kw_only=True):
    agent_type: str
    role: str = "dev"
    project_root: str | None = None  # default: the server's project
    agent_id: str | None = None  # keep an identity; an id the log knows needs its X-Agent-Token
    pid: int | None = None
    host: str | None = None  # default: the caller's address
    session_id: str | None = None


class Registered(msgspec.Struct, kw_only=True):
    agent_id: str
    name: str
    agent_type: str
    role: str
    project_root: str
    heartbeat_interval: float
    ttl_seconds: float
    rejoined: bool
    agent_token: str  # send it as X-Agent-Token on every action of this agent
    token_header: str = HEADER
    key_fingerprint: str | None = None  # the agent's signing key (held by this server's data dir)
    key_warning: str | None = None  # "CODE: sentence" when the key could not be made or read


class HeartbeatBody(msgspec.Struct, kw_only=True):
    agent: str | None = None  # optional: must be the token's agent (id or name)
    status: str | None = None


class Ack(msgspec.Struct, kw_only=True):
    ok: bool
    agent_id: str
    name: str
    ttl_seconds: float
    heartbeat_interval: float = HEARTBEAT_INTERVAL
    already_left: bool = False


class DeregisterBody(msgspec.Struct, kw_only=True):
    agent: str | None = None
    reason: str = "deregistered"


class AgentList(msgspec.Struct, kw_only=True):
    agents: list[AgentView]
    heartbeat_interval: float
    ttl_seconds: float


def _ack(a: AgentAck) -> Ack:
    return Ack(ok=a.ok, agent_id=a.agent_id, name=a.name, ttl_seconds=a.ttl_seconds, already_left=a.already_left)


def _taken(agent_id: str) -> HttpError:
    return HttpError(403, "AUTH_AGENT_ID_TAKEN",
                     f"agent id {agent_id!r} is already known to this log: to rejoin as it, send its {HEADER};"
                     " otherwise leave agent_id out to get a new id")


def _acted(st: ServerState, agent_id: str) -> tuple[bool, int]:
    """(Worker thread.) Whether ``agent_id`` acted in the log, and up to which position that was read."""
    head = st.lc.store.head().position
    return acted_since(st.lc.store, agent_id), head


async def register(request: Request) -> Response:
    st = srv(request)
    body = convert(await json_body(request, st.config.max_body_bytes), RegisterBody, what="agent.register")
    # a departed agent's token only serves to register that same id again (a rejoin)
    caller = agent_of(request, st.tokens, lifecycle=body.agent_id is not None)
    if body.agent_id is not None and caller is not None and caller != body.agent_id:
        raise mismatch(caller, body.agent_id)
    client = request.client
    # without the id's token, an explicit id must be new to the log: the command refuses a known
    # one before it emits anything (one write transaction, whichever server runs it). The long
    # part, reading the log for the id as an actor, runs here first, outside the write lock; the
    # command reads only the events appended since.
    new_only, checked_to = False, 0
    if body.agent_id is not None and caller is None:
        new_only = True
        acted, checked_to = await st.run(_acted, st, body.agent_id)
        if acted:
            raise _taken(body.agent_id)
    cmd = RegisterAgent(agent_type=body.agent_type, role=body.role,
                        project_root=body.project_root or st.project_root, agent_id=body.agent_id, pid=body.pid,
                        host=body.host or (client.host if client else None), session_id=body.session_id,
                        new_only=new_only, actors_checked_to=checked_to)
    try:
        res = await st.dispatch(request, cmd, actor=caller)
    except LeanCtxError as exc:
        if body.agent_id is not None and exc.code == AGENT_ID_TAKEN and exc.details.get("reason") == "known":
            raise _taken(body.agent_id) from None
        raise
    r = res.value
    token = st.tokens.mint(r.agent_id, await st.run(_registered_at, st, res.positions, r.agent_id))
    return JSON(Registered(agent_id=r.agent_id, name=r.name, agent_type=r.agent_type, role=r.role,
                           project_root=r.project_root, heartbeat_interval=r.heartbeat_interval,
                           ttl_seconds=r.ttl_seconds, rejoined=r.rejoined, agent_token=token,
                           key_fingerprint=r.key_fingerprint, key_warning=r.key_warning))


def _registered_at(st: ServerState, positions: list[int], agent_id: str) -> str:
    """(Worker thread.) The time of the ``agent.registered`` a registration appended (of the
    first answer, for an idempotent replay), which its token names (see ``tokens``)."""
    for p in positions:
        e = st.lc.store.get(p)
        if e is not None and e.kind == "agent.registered" and getattr(e.data(), "agent_id", None) == agent_id:
            return e.ts
    found = find_agent(st.reader("agents"), agent_id, now=st.now())  # pragma: no cover - always appended
    if found is None or found.agent_id != agent_id:
        raise HttpError(500, "AGENT_NOT_REGISTERED", f"agent {agent_id!r} was registered but is not in the registry")
    return found.registered_at


async def _check_named(st: ServerState, agent: str, named: str | None) -> None:
    """A body that names an agent must name the token's agent (by id or by name)."""
    if named is None or named == agent:
        return
    if not isinstance(named, str):
        raise mismatch(agent, named)

    def resolve() -> str | None:
        found = find_agent(st.reader("agents"), named.strip(), now=st.now())
        return found.agent_id if found else None

    if await st.run(resolve) != agent:
        raise mismatch(agent, named)


async def heartbeat(request: Request) -> Response:
    st = srv(request)
    agent = require_agent(request, st.tokens, lifecycle=True)  # a departed agent is told AGENT_LEFT
    body = convert(await json_body(request, st.config.max_body_bytes), HeartbeatBody, what="agent.heartbeat")
    await _check_named(st, agent, body.agent)
    res = await st.dispatch(request, Heartbeat(agent=agent, status=body.status), actor=agent)
    return JSON(_ack(res.value))


async def deregister(request: Request) -> Response:
    st = srv(request)
    agent = require_agent(request, st.tokens, lifecycle=True)  # leaving twice is a no-op
    body = convert(await json_body(request, st.config.max_body_bytes), DeregisterBody, what="agent.deregister")
    await _check_named(st, agent, body.agent)
    res = await st.dispatch(request, Deregister(agent=agent, reason=body.reason), actor=agent)
    return JSON(_ack(res.value))


async def list_(request: Request) -> Response:
    st = srv(request)
    project = q_str(request, "project_root")
    include_left = q_bool(request, "include_left")

    def query() -> list[AgentView]:
        return list_agents(st.reader("agents"), now=st.now(), project_root=project, include_left=include_left)

    return JSON(AgentList(agents=await st.run(query), heartbeat_interval=HEARTBEAT_INTERVAL, ttl_seconds=HEARTBEAT_TTL))


def roster_event(e: StoredEvent) -> ServerSentEvent | None:
    data: dict[str, Any] = payload_dict(e.payload)
    data.pop("schema_version", None)
    data.update(position=e.position, ts=e.ts)
    if e.kind == "agent.registered":
        name = "agent_joined"
    else:
        name = "agent_left"
        data.setdefault("reason", "deregistered")
    return ServerSentEvent(data=msgspec.json.encode(data).decode(), event=name, id=str(e.position))


async def events(request: Request) -> Response:
    st = srv(request)
    since = await sse.start_position(request, st)
    return sse.stream(st, since, TopicFilter(kinds=ROSTER_KINDS), roster_event)


# --- the timeout sweep ------------------------------------------------------------------------

def sweep_once(st: ServerState) -> int:
    """(Worker thread.) Record ``agent.left`` for agents stale at the server's clock; returns
    how many were recorded. Appends nothing when nobody is stale."""
    now = st.now()
    if not unrecorded_stale(st.reader("agents"), now=now):
        return 0
    res = st.lc.bus.dispatch(SweepAgents(all_projects=True), actor=SERVER_ACTOR, project=st.project_root, now=now)
    return len(res.value.recorded)


async def sweeper(st: ServerState) -> None:
    """Run ``sweep_once`` every ``sweep_interval`` seconds until cancelled."""
    while True:
        await asyncio.sleep(st.config.sweep_interval)
        try:
            n = await st.run(sweep_once, st)
            if n:
                log.info("recorded %d agent(s) gone after missing 3 heartbeats", n)
        except Exception as exc:  # keep sweeping; a failure is recorded as a tool.called error
            log.warning("agent sweep failed: %s", exc)


TAG = "agents"
ROUTES = [
    RouteSpec("POST", "/v1/agents/register", register, "Register an agent (its signing key is created on first registration); answers its id, its agent token and its key fingerprint.", TAG,
              auth=SERVER, body=RegisterBody, response=Registered),
    RouteSpec("POST", "/v1/agents/heartbeat", heartbeat, "Heartbeat as the token's agent.", TAG, auth=AGENT,
              body=HeartbeatBody, response=Ack),
    RouteSpec("GET", "/v1/agents/list", list_, "Agents with their status now (active, idle, stale, left).", TAG,
              response=AgentList, params=(Param("project_root", description="only this project's agents"),
                                          Param("include_left", type="boolean",
                                                description="also agents that deregistered"))),
    RouteSpec("POST", "/v1/agents/deregister", deregister, "Deregister the token's agent.", TAG, auth=AGENT,
              body=DeregisterBody, response=Ack),
    RouteSpec("GET", "/v1/agents/events", events,
              "SSE: agent_joined and agent_left (reason heartbeat_timeout after 3 missed heartbeats).", TAG,
              sse=True, params=(Param("since", type="integer", description="start after this position"),
                                Param("Last-Event-ID", where="header", type="integer",
                                      description="resume after this position"))),
]
