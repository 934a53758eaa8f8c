"""Server-sent event streams over the hub: ``id:`` is the log position, and a client that
reconnects with ``Last-Event-ID`` (or ``?since=``) gets every matching event after it, once."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anyio
from sse_starlette.event import ServerSentEvent
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request

from ...errors import InvalidInput
from ...events import StoredEvent, TopicFilter
from .state import ServerState

Render = Callable[[StoredEvent], "ServerSentEvent | None"]


async def start_position(request: Request, st: ServerState) -> int:
    """Where a stream starts: after ``Last-Event-ID`` when the client reconnects, else after
    ``?since=``, else after the current head (only what happens from now on)."""
    raw = request.headers.get("last-event-id")
    what = "Last-Event-ID"
    if raw is None or not raw.strip():
        raw, what = request.query_params.get("since"), "since"
    if raw is None or not raw.strip():
        return (await st.run(st.lc.store.head)).position
    try:
        value = int(raw.strip())
    except ValueError:
        raise InvalidInput("EVENT_INVALID_CURSOR",
                           f"{what} must be a log position (a whole number), not {raw[:40]!r}") from None
    if value < 0 or value > 2**62:
        raise InvalidInput("EVENT_INVALID_CURSOR", f"{what} must be a log position, 0 or more")
    head = (await st.run(st.lc.store.head)).position
    if value > head:  # positions come from this log: a later one means the log was replaced
        raise InvalidInput("EVENT_CURSOR_AHEAD",
                           f"{what} {value} is past the log's last position ({head}); the log was replaced or"
                           " belongs to another server: reconnect with since=0, or without Last-Event-ID")
    return value


SEND_TIMEOUT = 60.0  # a client that reads nothing for this long is dropped


def stream(st: ServerState, since: int, flt: TopicFilter | None, render: Render) -> EventSourceResponse:
    """The response; it ends when the client goes, or the server shuts down (the hub stops, or
    uvicorn's exit signal reaches sse-starlette: the stream then ends cleanly)."""
    shutdown = anyio.Event()

    async def gen() -> AsyncIterator[ServerSentEvent]:
        async for e in st.hub.follow(since, flt, stop=shutdown):
            msg = render(e)
            if msg is not None:
                yield msg

    return EventSourceResponse(gen(), ping=st.config.sse_ping, headers={"Cache-Control": "no-store"},
                               send_timeout=SEND_TIMEOUT, shutdown_event=shutdown, shutdown_grace_period=1.0)
