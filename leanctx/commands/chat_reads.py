"""The message bus's read side: peek, channels, info, wait and poll_events append nothing
(``wait`` reads through :class:`~.chat.ReadMessages` when it moves the cursor). The delivery
rules are those of :mod:`.chat`; ``project`` (the caller's project root) scopes agent names
as there.

A poll cursor is a log position this log handed out, so it is never past the head: one that is
(a cursor kept from another log, a log replaced under it, a typo) is refused with
``EVENT_CURSOR_AHEAD`` — as the SSE stream refuses such a ``Last-Event-ID`` — rather than
answered with nothing and handed back, which would leave the poller seeing nothing, forever
and silently. The refusal names the head and ``since=0``: the caller decides whether it has
missed events."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import CommandError, InvalidInput
from ..events import StoredEvent, TopicFilter
from ..projections.channels import (
    ChannelInfo,
    MessageView,
    canonical_agent,
    channel_info,
    get_cursor,
    last_messages,
    list_channels,
    messages_for,
    unread_count,
)
from .chat import ReadMessages, ReadResult, _channel_or_404, check_agent, check_channel

if TYPE_CHECKING:
    from ..app import LeanCtx
    from ..events import SqliteEventStore


class PollResult(msgspec.Struct, frozen=True):
    events: list[StoredEvent]
    next_cursor: int  # pass as ``since`` next time


def _reader_conn(lc: "LeanCtx") -> Any:
    lc.projections.ensure_current(["channels", "agents"])
    return lc.store.read_connection()


def identity(lc: "LeanCtx", ref: str | None, code: str = "CHAT_INVALID_READER", *,
             project: str | None = None) -> str:
    """The canonical id of ``ref`` (an agent id, or a registered name in ``project``)."""
    return canonical_agent(_reader_conn(lc), check_agent(ref, "reader", code), project_root=project)


def peek(lc: "LeanCtx", channel: str, reader: str, n: int = 10, *, project: str | None = None) -> list[MessageView]:
    """The last ``n`` messages of ``channel`` the reader can see (its own included); the
    cursor does not move."""
    channel = check_channel(channel)
    if n < 0:
        raise InvalidInput("CHAT_INVALID_LIMIT", "-n must be 0 or more")
    conn = _reader_conn(lc)
    _channel_or_404(conn, channel)
    return last_messages(conn, channel, n, reader=_who(conn, reader, project))


def _who(conn: Any, reader: str | None, project: str | None) -> str:
    return canonical_agent(conn, check_agent(reader, "reader", "CHAT_INVALID_READER"), project_root=project)


def channels(lc: "LeanCtx", reader: str | None, *, project: str | None = None) -> list[ChannelInfo]:
    conn = _reader_conn(lc)
    return list_channels(conn, reader=_who(conn, reader, project) if reader else None)


def info(lc: "LeanCtx", channel: str, reader: str | None, *, project: str | None = None) -> ChannelInfo:
    channel = check_channel(channel)
    conn = _reader_conn(lc)
    who = _who(conn, reader, project) if reader else None
    found = channel_info(conn, channel, reader=who)
    if found is None:
        _channel_or_404(conn, channel)
    assert found is not None
    return found


def wait(
    lc: "LeanCtx",
    channel: str,
    reader: str,
    timeout: float = 60.0,
    *,
    advance: bool = True,
    limit: int | None = None,
    session_id: str | None = None,
    project: str | None = None,
) -> ReadResult:
    """Block until a message for ``reader`` is after its cursor in ``channel`` (at once when
    one already is), then read it (moving the cursor unless ``advance`` is False). Raises
    ``CHAT_WAIT_TIMEOUT`` when ``timeout`` seconds pass first.

    Idle cost: ``store.wait`` checks ``PRAGMA data_version`` every few ms (no query); a post by
    another process wakes it at the next check."""
    channel = check_channel(channel)
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout >= 0):
        raise InvalidInput("CHAT_INVALID_TIMEOUT", "--timeout must be a finite number of seconds, 0 or more")
    if limit is not None and limit < 1:
        raise InvalidInput("CHAT_INVALID_LIMIT", "the limit must be at least 1")
    deadline = time.monotonic() + timeout
    conn = _reader_conn(lc)
    _channel_or_404(conn, channel)
    reader = _who(conn, reader, project)
    flt = TopicFilter(kinds=("message.posted",), channel=channel, to_agent=reader)
    seq, since = get_cursor(conn, reader, channel)
    while True:
        events = lc.store.wait(since, flt, timeout=max(0.0, deadline - time.monotonic()))
        if not events:
            raise CommandError("CHAT_WAIT_TIMEOUT",
                               f"no message for {reader} in {channel!r} within {timeout:g}s")
        since = events[-1].position
        if all(e.data().sender == reader for e in events):  # type: ignore[attr-defined]
            continue  # only the reader's own posts: not for it
        if advance:
            res = lc.bus.dispatch(ReadMessages(channel=channel, limit=limit), actor=reader,
                                  session_id=session_id, project=project).value
            if res.messages:
                return res
            continue  # another process reading as the same agent took them first
        lc.projections.ensure_current(["channels"])
        messages = messages_for(conn, channel, reader, after=seq, limit=limit)
        if messages:
            return ReadResult(channel=channel, reader=reader, messages=messages, cursor=seq, previous_cursor=seq,
                              unread=unread_count(conn, channel, reader))


def poll_events(store: "SqliteEventStore", since: int = 0, filter: TopicFilter | None = None,
                limit: int | None = None) -> PollResult:
    """Events after ``since`` that match ``filter``, and the cursor to poll from next.

    ``filter.to_agent`` is the caller's identity: events directed to another agent are never
    returned (broadcasts are). ``next_cursor`` is the last position examined: the last event
    returned when ``limit`` cut the answer short, else the head at query time. A ``since``
    past the head is refused (``EVENT_CURSOR_AHEAD``)."""
    if since < 0:
        raise InvalidInput("EVENT_INVALID_CURSOR", "since must be a position, 0 or more")
    if limit is not None and limit < 1:
        raise InvalidInput("EVENT_INVALID_LIMIT", "the limit must be at least 1")
    conn = store.read_connection()
    with conn:  # one read snapshot: the head and the events agree
        head = store.head().position
        events = store.read_all(since, filter, limit) if since <= head else []
    if since > head:
        raise InvalidInput(
            "EVENT_CURSOR_AHEAD",
            f"since={since} is past the log's last position ({head}), so it is not a cursor of this log (kept"
            f" from another log, or mistyped): poll from since={head} for what comes next, or since=0 to read"
            " the log from the start",
            head=head,
        )
    if limit is not None and len(events) == limit:
        return PollResult(events, events[-1].position)
    return PollResult(events, head)


__all__ = ["PollResult", "channels", "identity", "info", "peek", "poll_events", "wait"]
