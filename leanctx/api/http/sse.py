"""Server-sent event streams over the hub: ``id:`` is the log position, and a client that
reconnects with ``Last-Event-ID`` (or ``?since=``) gets every matching event after it, once.

Each chunk of events from the hub goes out as one write (a disconnect is noticed between two
chunks). A stream ends when its client goes, or when the hub stops (shutdown): the hub, not
sse-starlette's own shutdown watcher, ends these streams, because that watcher cancels a stream
blocked on a client that reads nothing and leaves its response incomplete (uvicorn then logs an
ERROR and holds the socket until its graceful timeout). The server drops such clients instead
(``server._Server``), which it recognises by the peer addresses the hub keeps.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from sse_starlette.event import ServerSentEvent
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

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
    if value < 0:
        raise InvalidInput("EVENT_INVALID_CURSOR", f"{what} must be a log position, 0 or more")
    head = (await st.run(st.lc.store.head)).position
    if value > head:  # positions come from this log: a later one means the log was replaced
        raise InvalidInput("EVENT_CURSOR_AHEAD",
                           f"{what} {value} is past the log's last position ({head}); the log was replaced or"
                           " belongs to another server: reconnect with since=0, or without Last-Event-ID")
    return value


SEND_TIMEOUT = 60.0  # a client that reads nothing for this long is dropped


class HubStream(EventSourceResponse):
    """An SSE response that the hub ends at shutdown, and whose peer the hub knows meanwhile."""

    def __init__(self, content: AsyncIterator[bytes], hub: Any, **kw: Any) -> None:
        super().__init__(content, **kw)
        self.hub = hub

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with self.hub.streaming(scope.get("client")):
            await super().__call__(scope, receive, send)

    async def _listen_for_exit_signal_with_grace(self) -> None:
        # replaces sse-starlette's watcher (see the module docstring): the stream ends with the hub
        await anyio.sleep_forever()


def stream(st: ServerState, since: int, flt: TopicFilter | None, render: Render) -> EventSourceResponse:
    """The response; it ends when the client goes, or the server shuts down (the hub stops: the
    stream then ends cleanly; a client that reads nothing is dropped by the server)."""

    async def gen() -> AsyncIterator[bytes]:
        async for chunk in st.hub.follow(since, flt):
            out = b"".join(msg.encode() for msg in map(render, chunk) if msg is not None)
            if out:
                yield out

    return HubStream(gen(), st.hub, ping=st.config.sse_ping, headers={"Cache-Control": "no-store"},
                     send_timeout=SEND_TIMEOUT)
