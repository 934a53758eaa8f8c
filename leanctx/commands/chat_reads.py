"""The message bus's read side: peek, channels, info, wait and poll_events append nothing
(``wait`` reads through :class:`~.chat.ReadMessages` when it moves the cursor). The delivery
rules are those of :mod:`.chat`; ``project`` (the caller's project root) scopes agent names
as there.

``summaries`` lists the channels with their tasks not yet finished, and also the names that
only such tasks use (a task may name any channel; posting there needs ``chat init`` first).

A poll cursor is a log position this log handed out, so it is never past the head: one that is
(a cursor kept from another log, a log replaced under it, a typo) is refused with
``EVENT_CURSOR_AHEAD`` — as the SSE stream refuses such a ``Last-Event-ID`` — rather than
answered with nothing and handed back, which would leave the poller seeing nothing, forever
and silently. The refusal names the head and ``since=0``: the caller decides whether it has
missed events. ``since="now"`` (``NOW``) starts from the head: no past event, and the head as
the cursor to poll from next.

What an agent sees of the log (``AgentScope``, for ``ctx_agent poll_events`` and the HTTP log
routes read with an agent token): an event it appended itself (any kind: its own tool calls,
reads, shell runs, its messages to others); else an event directed to it; else a broadcast
*coordination* event (``COORDINATION_KINDS``: messages, channels and adapter events, tasks,
scent claims, locks, joins and leaves) of its project or of none. Never another agent's
``tool.called`` / ``file.read`` / ``shell.ran`` / ``search.ran`` / session, budget or cursor records:
they carry that agent's session id, paths, commands and queries. A kind not in the list is
private by default. The operator (the CLI, HTTP without an agent token) reads the whole log."""

from __future__ import annotations

import math
import time
from collections import Counter
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from .. import clock
from ..errors import CommandError, InvalidInput
from ..events import StoredEvent, TopicFilter
from ..projections.channels import (
    ChannelInfo,
    MessageView,
    canonical_agent,
    channel_info,
    get_cursor,
    get_message,
    last_messages,
    list_channels,
    unread_count,
)
from ..projections.tasks import list_tasks
from .chat import ReadMessages, ReadResult, _channel_or_404, check_agent, check_channel
from .chat_delivery import DEFAULT_READ_LIMIT, DEFAULT_READ_TOKENS, read_bounds, take

if TYPE_CHECKING:
    from ..app import LeanCtx
    from ..events import SqliteEventStore


class PollResult(msgspec.Struct, frozen=True):
    events: list[StoredEvent]
    next_cursor: int  # pass as ``since`` next time


class ChannelSummary(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    channel: ChannelInfo | None  # None: only tasks name it (no channel was created)
    tasks: int  # its tasks not finished (open, in progress, blocked)


UNFINISHED = ("open", "in_progress", "blocked")
NOW = "now"  # ``since``: start from the head
POLL_BATCH = 500  # poll_events with a scope: events read per query while looking for visible ones

# broadcast kinds every agent of the project sees (the module doc); ``family.*`` is a family
COORDINATION_KINDS = ("message.posted", "channel.created", "adapter.*", "task.*", "scent.*", "lock.*",
                      "agent.registered", "agent.deregistered", "agent.left")


class AgentScope(msgspec.Struct, frozen=True):
    """What ``agent`` (an agent id) may see of the log, in ``project`` (its project root; None:
    coordination events of every project). See the module doc."""

    agent: str
    project: str | None = None

    def sees(self, e: StoredEvent) -> bool:
        if e.actor == self.agent:
            return True
        if e.to_agent is not None:
            return e.to_agent == self.agent
        if self.project is not None and e.project is not None and e.project != self.project:
            return False
        return any(e.kind.startswith(k[:-1]) if k.endswith(".*") else e.kind == k for k in COORDINATION_KINDS)


def check_since(since: Any) -> int | Literal["now"]:
    """A poll's ``since`` as given by a caller: a position (0 or more) or ``"now"``."""
    if since == NOW:
        return "now"
    if isinstance(since, bool) or not isinstance(since, int) or since < 0:
        raise InvalidInput("EVENT_INVALID_CURSOR",
                           f"since must be a log position (0 or more) or {NOW!r}, not {str(since)[:40]!r}")
    return since


def _reader_conn(lc: LeanCtx) -> Any:
    lc.projections.ensure_current(["channels", "agents"])
    return lc.store.read_connection()


def identity(lc: LeanCtx, ref: str | None, code: str = "CHAT_INVALID_READER", *,
             project: str | None = None) -> str:
    """The canonical id of ``ref`` (an agent id, or a registered name in ``project``)."""
    return canonical_agent(_reader_conn(lc), check_agent(ref, "reader", code), project_root=project)


def peek(lc: LeanCtx, channel: str, reader: str, n: int = 10, *, project: str | None = None,
         seq: int | None = None) -> list[MessageView]:
    """The last ``n`` messages of ``channel`` the reader can see (its own included), or with
    ``seq`` that one message, whole (``CHAT_MESSAGE_NOT_FOUND`` when the reader cannot see it);
    the cursor does not move."""
    channel = check_channel(channel)
    if n < 0:
        raise InvalidInput("CHAT_INVALID_LIMIT", "-n must be 0 or more")
    conn = _reader_conn(lc)
    _channel_or_404(conn, channel)
    who = _who(conn, reader, project)
    if seq is None:
        return last_messages(conn, channel, n, reader=who)
    found = get_message(conn, channel, seq, reader=who)
    if found is None:
        raise CommandError("CHAT_MESSAGE_NOT_FOUND", f"there is no message #{seq} in {channel!r} that {who} can see;"
                           f" see the last ones with `lean-ctx chat peek --channel {channel}`")
    return [found]


def _who(conn: Any, reader: str | None, project: str | None) -> str:
    return canonical_agent(conn, check_agent(reader, "reader", "CHAT_INVALID_READER"), project_root=project)


def channels(lc: LeanCtx, reader: str | None, *, project: str | None = None) -> list[ChannelInfo]:
    conn = _reader_conn(lc)
    return list_channels(conn, reader=_who(conn, reader, project) if reader else None)


def summaries(lc: LeanCtx, reader: str | None, *, project: str | None = None) -> list[ChannelSummary]:
    """Every channel (as :func:`channels`) and every name that tasks not finished use, by name,
    with the count of those tasks (finished ones are not scanned: a log keeps them all)."""
    lc.projections.ensure_current(["tasks"])
    conn = _reader_conn(lc)
    open_tasks = Counter(t.channel for t in list_tasks(conn, now=clock.now(), status=UNFINISHED))
    found = {c.name: c for c in channels(lc, reader, project=project)}
    names = sorted(set(found) | set(open_tasks))
    return [ChannelSummary(name=n, channel=found.get(n), tasks=open_tasks.get(n, 0)) for n in names]


def info(lc: LeanCtx, channel: str, reader: str | None, *, project: str | None = None) -> ChannelInfo:
    channel = check_channel(channel)
    conn = _reader_conn(lc)
    who = _who(conn, reader, project) if reader else None
    found = channel_info(conn, channel, reader=who)
    if found is None:
        _channel_or_404(conn, channel)
    assert found is not None
    return found


def wait(
    lc: LeanCtx,
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
    limit = DEFAULT_READ_LIMIT if limit is None else limit
    bounds = read_bounds(limit, DEFAULT_READ_TOKENS, None)
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
        messages, _ = take(conn, channel, reader, after=seq, limit=bounds[0], max_tokens=bounds[1],
                           encoding=bounds[2])
        if messages:
            return ReadResult(channel=channel, reader=reader, messages=messages, cursor=seq, previous_cursor=seq,
                              unread=unread_count(conn, channel, reader))


def poll_events(store: SqliteEventStore, since: int | Literal["now"] = 0, filter: TopicFilter | None = None,
                limit: int | None = None, *, scope: AgentScope | None = None) -> PollResult:
    """Events after ``since`` that match ``filter`` (and that ``scope`` sees, when given), and
    the cursor to poll from next.

    ``filter.to_agent`` is the caller's identity: events directed to another agent are never
    returned (broadcasts are). ``next_cursor`` is the last position examined: the last event
    returned when ``limit`` cut the answer short, else the head at query time (events ``scope``
    hides are examined, so the cursor moves past them). ``since="now"`` returns no event and
    the head. A ``since`` past the head is refused (``EVENT_CURSOR_AHEAD``)."""
    start = check_since(since)
    if limit is not None and limit < 1:
        raise InvalidInput("EVENT_INVALID_LIMIT", "the limit must be at least 1")
    conn = store.read_connection()
    res: PollResult | None = None
    with conn:  # one read snapshot: the head and the events agree
        head = store.head().position
        if isinstance(start, int) and start <= head:
            res = _read(store, start, head, filter, limit) if scope is None else _scoped(
                store, start, head, filter, limit, scope)
    if isinstance(start, int) and start > head:
        raise InvalidInput(
            "EVENT_CURSOR_AHEAD",
            f"since={start} is past the log's last position ({head}), so it is not a cursor of this log (kept"
            f" from another log, or mistyped): poll from since={head} for what comes next, or since=0 to read"
            " the log from the start",
            head=head,
        )
    return res if res is not None else PollResult([], head)  # since="now": the head, nothing before it


def _read(store: SqliteEventStore, since: int, head: int, filter: TopicFilter | None,
          limit: int | None) -> PollResult:
    events = store.read_all(since, filter, limit)
    if limit is not None and len(events) == limit:
        return PollResult(events, events[-1].position)
    return PollResult(events, head)


def _scoped(store: SqliteEventStore, since: int, head: int, filter: TopicFilter | None, limit: int | None,
            scope: AgentScope) -> PollResult:
    """``poll_events`` with a scope, in its snapshot: batches until ``limit`` visible events."""
    out: list[StoredEvent] = []
    cursor = since
    while cursor < head:
        batch = store.read_all(cursor, filter, POLL_BATCH)
        for e in batch:
            cursor = e.position
            if scope.sees(e):
                out.append(e)
                if limit is not None and len(out) == limit:
                    return PollResult(out, cursor)
        if len(batch) < POLL_BATCH:
            break
    return PollResult(out, head)


__all__ = ["COORDINATION_KINDS", "NOW", "AgentScope", "ChannelSummary", "PollResult", "channels", "check_since",
           "identity", "info", "peek", "poll_events", "summaries", "wait"]
