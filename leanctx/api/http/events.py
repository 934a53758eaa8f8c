"""The log over HTTP: the SSE stream, polling, full-text search and lineage.

Filters are ``TopicFilter`` fields as query parameters: ``kinds`` (repeatable or
comma-separated; ``agent.*`` matches a family), ``actor``, ``to_agent``, ``channel``,
``stream_prefix``, ``consistency`` (``strong`` | ``eventual``).

An agent's view: a caller that sends an ``X-Agent-Token`` reads as that agent, in the server's
project, by the rule of ``leanctx.commands.chat_reads.AgentScope`` (the one of ``ctx_agent
poll_events``): its own events, the events directed to it, and the broadcast coordination
events of the project (messages, tasks, claims, locks, joins and leaves) — so never an event
directed to another agent, nor another agent's ``tool.called`` / ``file.read`` / ``shell.ran``
records (session ids, paths, commands). The same for the stream, poll, search and lineage
(search returns at most ``limit`` of the best ``SEARCH_OVERFETCH × limit`` matches that the
agent may see). Naming another agent in ``to_agent`` is ``403 AUTH_AGENT_MISMATCH``. Without an
agent token the caller is the server's operator and sees the whole log (as ``lean-ctx events
tail`` does on this machine).

``since=now`` (poll and stream) starts from the head: poll answers no event and the head as
``next_cursor``; the stream sends what is appended from then on (as without ``since``).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from sse_starlette.event import ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response

from ...commands.chat_reads import NOW, AgentScope, check_since, poll_events
from ...errors import InvalidInput, NotFound
from ...events import StoredEvent, TopicFilter
from ...ops.search_input import MAX_QUERY_CHARS
from . import sse
from .bodies import q_int, q_list, q_str
from .responses import JSON, encode
from .routes import AGENT_OPTIONAL, Param, RouteSpec
from .security import agent_of, mismatch
from .state import srv

CONSISTENCY = ("strong", "eventual")
MAX_SEARCH = 200
MAX_POLL = 1000
SEARCH_OVERFETCH = 5  # an agent's search looks at this many times ``limit`` matches (module doc)

FILTER_PARAMS = (
    Param("kinds", repeated=True, description="event kinds; `family.*` matches a family; repeat or comma-separate"),
    Param("actor", description="who appended it"),
    Param("to_agent", description="read as this agent: broadcasts and events directed to it (needs its token)"),
    Param("channel"),
    Param("stream_prefix", description="e.g. `task:` or `agent:` "),
    Param("consistency", description="strong | eventual"),
)


def event_dict(e: StoredEvent) -> dict[str, Any]:
    return e.to_dict()


def topic_filter(request: Request) -> TopicFilter | None:
    """The ``TopicFilter`` of the query string; None when nothing filters. (An agent's own view
    is ``reader``'s.)"""
    consistency = q_str(request, "consistency")
    if consistency is not None and consistency not in CONSISTENCY:
        raise InvalidInput("EVENT_INVALID_FILTER", f"consistency must be one of {', '.join(CONSISTENCY)}")
    kinds = q_list(request, "kinds") + q_list(request, "kind")
    if len(kinds) > 100:
        raise InvalidInput("EVENT_INVALID_FILTER", "at most 100 kinds per filter")
    flt = TopicFilter(
        kinds=tuple(dict.fromkeys(kinds)) or None,
        actor=q_str(request, "actor", max_len=256),
        to_agent=q_str(request, "to_agent", max_len=256),
        channel=q_str(request, "channel", max_len=256),
        stream_prefix=q_str(request, "stream_prefix", max_len=1024),
        consistency=consistency,
    )
    return None if flt.is_empty() else flt


def reader(request: Request) -> tuple[TopicFilter | None, AgentScope | None]:
    """The query's filter, and the calling agent's scope when it sent its token (then the
    scope, not ``to_agent``, decides which directed events it sees)."""
    flt = topic_filter(request)
    st = srv(request)
    agent = agent_of(request, st.tokens)
    if agent is None:
        return flt, None
    if flt is not None and flt.to_agent is not None:
        if flt.to_agent != agent:
            raise mismatch(agent, flt.to_agent)
        flt = msgspec.structs.replace(flt, to_agent=None)
        flt = None if flt.is_empty() else flt
    return flt, AgentScope(agent, str(st.project_root))


def _since(request: Request) -> int | Literal["now"]:
    """``since`` of the query: a position (default 0) or ``now``."""
    raw = (q_str(request, "since", max_len=40) or "").strip()
    if not raw:
        return 0
    try:
        value = int(raw)
    except ValueError:
        return check_since(raw)  # refused: EVENT_INVALID_CURSOR
    return check_since(value)  # past the head (however far): EVENT_CURSOR_AHEAD


def _render(e: StoredEvent) -> ServerSentEvent:
    return ServerSentEvent(data=encode(event_dict(e)).decode(), event=e.kind, id=str(e.position))


async def stream(request: Request) -> Response:
    st = srv(request)
    flt, scope = reader(request)
    if request.query_params.get("since", "").strip() == NOW and not request.headers.get("last-event-id", "").strip():
        since = (await st.run(st.lc.store.head)).position
    else:
        since = await sse.start_position(request, st)
    if scope is None:
        return sse.stream(st, since, flt, _render)
    sees = scope.sees
    return sse.stream(st, since, flt, lambda e: _render(e) if sees(e) else None)


class PollAnswer(msgspec.Struct):
    events: list[dict[str, Any]]
    next_cursor: int


async def poll(request: Request) -> Response:
    st = srv(request)
    flt, scope = reader(request)
    since = _since(request)
    limit = q_int(request, "limit", 100, lo=1, hi=MAX_POLL)
    res = await st.run(poll_events, st.lc.store, since, flt, limit, scope=scope)
    return JSON(PollAnswer([event_dict(e) for e in res.events], res.next_cursor))


class SearchHitView(msgspec.Struct):
    score: float
    event: dict[str, Any]


class SearchAnswer(msgspec.Struct):
    query: str
    hits: list[SearchHitView]


async def search(request: Request) -> Response:
    st = srv(request)
    q = q_str(request, "q", max_len=MAX_QUERY_CHARS)  # the CLI's and ctx_search's cap
    if q is None or not q.strip():
        raise InvalidInput("EVENT_INVALID_QUERY", "give a search query: /v1/events/search?q=words")
    limit = q_int(request, "limit", 20, lo=1, hi=MAX_SEARCH) or 20
    flt, scope = reader(request)
    if scope is None:
        hits = await st.run(st.lc.store.search, q, limit, flt)
    else:
        found = await st.run(st.lc.store.search, q, limit * SEARCH_OVERFETCH, flt)
        hits = [h for h in found if scope.sees(h.event)][:limit]
    return JSON(SearchAnswer(q, [SearchHitView(h.score, event_dict(h.event)) for h in hits]))


class LineageAnswer(msgspec.Struct):
    event: dict[str, Any]
    ancestors: list[dict[str, Any]]
    descendants: list[dict[str, Any]]


async def lineage(request: Request) -> Response:
    st = srv(request)
    raw = request.path_params.get("position", "")
    try:
        position = int(raw)
    except ValueError:
        raise InvalidInput("EVENT_INVALID_POSITION", f"{raw[:40]!r} is not a log position (a whole number)") from None
    if position < 1:  # past the head (however far): EVENT_NOT_FOUND, as for any unknown position
        raise InvalidInput("EVENT_INVALID_POSITION", "a log position is 1 or more")
    _, scope = reader(request)
    lin = await st.run(st.lc.store.lineage, position)
    visible = scope.sees if scope is not None else (lambda e: True)
    if not visible(lin.event):
        raise NotFound("EVENT_NOT_FOUND", f"no event at position {position} that you can see")
    return JSON(LineageAnswer(event_dict(lin.event), [event_dict(e) for e in lin.ancestors if visible(e)],
                              [event_dict(e) for e in lin.descendants if visible(e)]))


TAG = "events"
ROUTES = [
    RouteSpec("GET", "/v1/events", stream,
              "SSE: the log as it grows. `id:` is the position; reconnect with Last-Event-ID to resume.", TAG,
              auth=AGENT_OPTIONAL, sse=True,
              params=(*FILTER_PARAMS, Param("since", description="start after this position, or `now`"),
                      Param("Last-Event-ID", where="header", type="integer",
                            description="resume after this position"))),
    RouteSpec("GET", "/v1/events/poll", poll,
              "Events after `since` (JSON; an agent sees its own, those sent to it and the project's coordination"
              " events), and the cursor to poll from next.", TAG,
              auth=AGENT_OPTIONAL, response=PollAnswer,
              params=(*FILTER_PARAMS, Param("since", description="a position (default 0), or `now`: no past event,"
                                                   " the head as next_cursor"), Param("limit", type="integer"))),
    RouteSpec("GET", "/v1/events/search", search, "Full-text search of the log (any text is a safe query).", TAG,
              auth=AGENT_OPTIONAL, response=SearchAnswer,
              params=(Param("q", required=True), Param("limit", type="integer"), *FILTER_PARAMS)),
    RouteSpec("GET", "/v1/events/lineage/{position}", lineage,
              "An event with what caused it and what it caused.", TAG, auth=AGENT_OPTIONAL, response=LineageAnswer,
              params=(Param("position", where="path", type="integer", required=True),)),
]
