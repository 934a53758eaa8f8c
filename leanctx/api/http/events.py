"""The log over HTTP: the SSE stream, polling, full-text search and lineage.

Filters are ``TopicFilter`` fields as query parameters: ``kinds`` (repeatable or
comma-separated; ``agent.*`` matches a family), ``actor``, ``to_agent``, ``channel``,
``stream_prefix``, ``consistency`` (``strong`` | ``eventual``).

Directed events: a caller that sends an ``X-Agent-Token`` reads as that agent, so events
directed to another agent never reach it (the same rule as ``chat read``); naming another
agent in ``to_agent`` is ``403 AUTH_AGENT_MISMATCH``. Without an agent token the caller is the
server's operator and sees the whole log (as ``lean-ctx events tail`` does on this machine).
"""

from __future__ import annotations

from typing import Any

import msgspec
from sse_starlette.event import ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response

from ...commands.chat_reads import poll_events
from ...errors import InvalidInput, NotFound
from ...events import StoredEvent, TopicFilter
from . import sse
from .bodies import q_int, q_list, q_str
from .responses import JSON, encode
from .routes import AGENT_OPTIONAL, Param, RouteSpec
from .security import agent_of, mismatch
from .state import srv

CONSISTENCY = ("strong", "eventual")
MAX_SEARCH = 200
MAX_POLL = 1000

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
    """The ``TopicFilter`` of the query string, narrowed to the calling agent when it sent its
    token; None when nothing filters."""
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
    agent = agent_of(request, srv(request).tokens)
    if agent is not None:
        if flt.to_agent is not None and flt.to_agent != agent:
            raise mismatch(agent, flt.to_agent)
        flt = msgspec.structs.replace(flt, to_agent=agent)
    return None if flt.is_empty() else flt


def _render(e: StoredEvent) -> ServerSentEvent:
    return ServerSentEvent(data=encode(event_dict(e)).decode(), event=e.kind, id=str(e.position))


async def stream(request: Request) -> Response:
    st = srv(request)
    flt = topic_filter(request)
    since = await sse.start_position(request, st)
    return sse.stream(st, since, flt, _render)


class PollAnswer(msgspec.Struct):
    events: list[dict[str, Any]]
    next_cursor: int


async def poll(request: Request) -> Response:
    st = srv(request)
    flt = topic_filter(request)
    since = q_int(request, "since", 0, lo=0, hi=2**62)
    limit = q_int(request, "limit", 100, lo=1, hi=MAX_POLL)
    res = await st.run(poll_events, st.lc.store, since, flt, limit)
    return JSON(PollAnswer([event_dict(e) for e in res.events], res.next_cursor))


class SearchHitView(msgspec.Struct):
    score: float
    event: dict[str, Any]


class SearchAnswer(msgspec.Struct):
    query: str
    hits: list[SearchHitView]


async def search(request: Request) -> Response:
    st = srv(request)
    q = q_str(request, "q", max_len=1000)
    if q is None or not q.strip():
        raise InvalidInput("EVENT_INVALID_QUERY", "give a search query: /v1/events/search?q=words")
    limit = q_int(request, "limit", 20, lo=1, hi=MAX_SEARCH)
    flt = topic_filter(request)
    hits = await st.run(st.lc.store.search, q, limit, flt)
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
    if not 1 <= position <= 2**62:
        raise InvalidInput("EVENT_INVALID_POSITION", "a log position is 1 or more")
    agent = agent_of(request, st.tokens)
    lin = await st.run(st.lc.store.lineage, position)
    visible = TopicFilter(to_agent=agent).matches if agent is not None else (lambda e: True)
    if not visible(lin.event):
        raise NotFound("EVENT_NOT_FOUND", f"no event at position {position} that you can see")
    return JSON(LineageAnswer(event_dict(lin.event), [event_dict(e) for e in lin.ancestors if visible(e)],
                              [event_dict(e) for e in lin.descendants if visible(e)]))


TAG = "events"
ROUTES = [
    RouteSpec("GET", "/v1/events", stream,
              "SSE: the log as it grows. `id:` is the position; reconnect with Last-Event-ID to resume.", TAG,
              auth=AGENT_OPTIONAL, sse=True,
              params=(*FILTER_PARAMS, Param("since", type="integer", description="start after this position"),
                      Param("Last-Event-ID", where="header", type="integer",
                            description="resume after this position"))),
    RouteSpec("GET", "/v1/events/poll", poll, "Events after `since` (JSON), and the cursor to poll from next.", TAG,
              auth=AGENT_OPTIONAL, response=PollAnswer,
              params=(*FILTER_PARAMS, Param("since", type="integer"), Param("limit", type="integer"))),
    RouteSpec("GET", "/v1/events/search", search, "Full-text search of the log (any text is a safe query).", TAG,
              auth=AGENT_OPTIONAL, response=SearchAnswer,
              params=(Param("q", required=True), Param("limit", type="integer"), *FILTER_PARAMS)),
    RouteSpec("GET", "/v1/events/lineage/{position}", lineage,
              "An event with what caused it and what it caused.", TAG, auth=AGENT_OPTIONAL, response=LineageAnswer,
              params=(Param("position", where="path", type="integer", required=True),)),
]
