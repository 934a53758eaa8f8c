"""The message bus's read side: peek, channels, info, wait and poll_events append nothing
(``wait`` reads through :class:`~.chat.ReadMessages` when it moves the cursor). The delivery
rules are those of :mod:`.chat`."""

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


def identity(lc: "LeanCtx", ref: str | None, code: str = "CHAT_INVALID_READER") -> str:
    """The canonical id of ``ref`` (an agent id or a registered name)."""
    return canonical_agent(_reader_conn(lc), check_agent(ref, "reader", code))


def peek(lc: "LeanCtx", channel: str, reader: str, n: int = 10) -> list[MessageView]:
    """The last ``n`` messages of ``channel`` the reader can see (its own included); the
    cursor does not move."""
    channel = check_channel(channel)
    if n < 0:
        raise InvalidInput("CHAT_INVALID_LIMIT", "-n must be 0 or more")
    conn = _reader_conn(lc)
    _channel_or_404(conn, channel)
    return last_messages(conn, channel, n, reader=canonical_agent(conn, check_agent(reader, "reader",
                                                                                    "CHAT_INVALID_READER")))


def channels(lc: "LeanCtx", reader: str | None) -> list[ChannelInfo]:
    conn = _reader_conn(lc)
    who = canonical_agent(conn, check_agent(reader, "reader", "CHAT_INVALID_READER")) if reader else None
    return list_channels(conn, reader=who)


def info(lc: "LeanCtx", channel: str, reader: str | None) -> ChannelInfo:
    channel = check_channel(channel)
    conn = _reader_conn(lc)
    who = canonical_agent(conn, check_agent(reader, "reader", "CHAT_INVALID_READER")) if reader else None
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
    reader = canonical_agent(conn, check_agent(reader, "reader", "CHAT_INVALID_READER"))
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
    returned when ``limit`` cut the answer short, else the head at query time."""
    if since < 0:
        raise InvalidInput("EVENT_INVALID_CURSOR", "since must be a position, 0 or more")
    if limit is not None and limit < 1:
        raise InvalidInput("EVENT_INVALID_LIMIT", "the limit must be at least 1")
    conn = store.read_connection()
    with conn:  # one read snapshot: the head and the events agree
        head = store.head().position
        events = store.read_all(since, filter, limit)
    if limit is not None and len(events) == limit:
        return PollResult(events, events[-1].position)
    return PollResult(events, max(since, head))



__all__ = ["PollResult", "channels", "identity", "info", "peek", "poll_events", "wait"]
