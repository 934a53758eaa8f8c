"""The message bus: channels, posts, reads with cursors, adapter-neutral capability/status
events. The read side that appends nothing (peek, wait, poll_events) is :mod:`.chat_reads`.

Delivery rules (every surface goes through these functions):

- A message goes ``to`` one agent (the event's ``to_agent``) or to ``all`` (``to_agent`` NULL,
  a broadcast). A directed message never reaches another agent, through any verb: read, peek,
  wait, poll_events, channels, export (its sender still sees it in peek, channels and export).
- "For the reader" — what ``read`` and ``wait`` deliver — is a broadcast or a message directed to
  the reader, *not posted by the reader itself*: an agent never receives its own posts (so a
  ``wait`` is not woken by the agent's own post). ``peek`` shows the channel as the reader sees
  it, own posts included.
- ``read`` delivers the messages after the reader's cursor, in seq order, and moves the cursor
  with a ``cursor.advanced`` event (one per read that moves it; none when nothing is new). A
  read is bounded (:mod:`.chat_delivery`: 50 messages and the answer cap's worth of text by
  default): the cursor moves only past what it delivered, and ``unread`` says how many more
  wait. When it delivered everything, the cursor also moves past messages that are not for the
  reader (its own, others' directed ones), so they are never scanned again. Reads are exactly-once: the handler runs in the write
  transaction, so two processes reading as the same agent never get the same message.
- Agents are named by id; a registered agent's name (``cursor-dev-1``) resolves to its id, for
  recipients, senders and readers alike. Names repeat per project (a log shared by several
  projects through ``LEAN_CTX_DB`` holds one ``cursor-dev-1`` each), so a name resolves among
  the agents of the command's project; an id resolves in every project.
- A recipient must be someone, whoever the sender is (registered, or the CLI used without
  ``agent register``, whose identity is a free-form ``$LEAN_CTX_AGENT_ID``): a registered agent
  (refused with ``AGENT_LEFT`` once it deregistered; a timed-out agent still gets its mail when
  it comes back), a channel member, or an identity the bus already knows (it has posted, read or
  reported an adapter status: ``known_identity``). Anything else — a typo, a name nobody has, a
  name an agent had before it registered again under another role, an identity that has not
  acted yet — is refused with ``AGENT_NOT_FOUND`` instead of being posted to nobody: an agent
  that will read later registers first (or posts once), then it can be addressed.
- Who may post to a channel: anyone, unless the channel was created with members (``chat init
  --members``); then only its members and its creator may post there (``CHAT_NOT_MEMBER``).
  Reading stays open to everyone (see ``post_message``).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Union

import msgspec

from ..errors import CommandError, InvalidInput
from ..events import ANY, NO_STREAM, ExpectedVersion
from ..events.kinds.chat import (
    AdapterCapabilityDeclared,
    AdapterStatusReported,
    CapabilityWire,
    ChannelCreated,
    CursorAdvanced,
    MessagePosted,
    parse_adapter_event,
)
from ..projections.agents import AgentView, find_agent
from ..projections.channels import (
    ALL,
    DEFAULT_CHANNEL,
    ChannelInfo,
    MessageView,
    canonical_agent,
    channel_created,
    channel_exists,
    channel_info,
    channel_members,
    get_cursor,
    get_message,
    known_identity,
    last_seq,
    unread_count,
)
from ..projections.tasks import count_tasks
from .bus import Command, CommandContext, handles
from .chat_delivery import DEFAULT_READ_LIMIT, DEFAULT_READ_TOKENS, read_bounds, take

_CHANNEL = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_AGENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_CATEGORY = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
CATEGORIES = ("finding", "warning", "request", "status")  # well known; any slug is accepted
MAX_TITLE = 300
MAX_TOPIC = 300
MAX_BODY_BYTES = 256 * 1024
MAX_MEMBERS = 256
ADAPTER_KINDS = ("adapter.capability_declared", "adapter.status_reported")


# --- validation ------------------------------------------------------------------------

def _has_control(text: str) -> bool:
    return any(unicodedata.category(c) == "Cc" or c in "\u2028\u2029" for c in text)


def check_channel(name: str) -> str:
    """A channel name: a lower-case slug (a leading ``#`` is dropped)."""
    value = name.strip().removeprefix("#")
    if not _CHANNEL.match(value):
        raise InvalidInput(
            "CHAT_INVALID_CHANNEL",
            f"channel {name!r} is not valid: use 1-64 lower-case letters, digits, '-' or '_', starting with a"
            " letter or digit",
        )
    return value


def check_agent(ref: str | None, what: str, code: str) -> str:
    if ref is None or not ref.strip():
        raise InvalidInput(code, f"no {what} given: set LEAN_CTX_AGENT_ID or pass --as")
    value = ref.strip()
    if not _AGENT.match(value):
        raise InvalidInput(code, f"{what} {ref!r} is not a valid agent id: 1-128 letters, digits, '.', '_', ':' or '-'")
    return value


def channel_not_found(conn: Any, channel: str) -> CommandError:
    """``CHAT_CHANNEL_NOT_FOUND`` for ``channel``, saying how to create it (and that it has tasks, if so)."""
    tasks = count_tasks(conn, channel)
    has = (f"channel {channel!r} has {tasks} task{'s' if tasks != 1 else ''} (a task may name any channel) but"
           " was never created" if tasks else f"no channel {channel!r}")
    return CommandError(
        "CHAT_CHANNEL_NOT_FOUND",
        f"{has}: create it with ctx_agent action=init channel={channel} (or `lean-ctx chat init {channel}`);"
        " see the channels with ctx_agent action=channels (or `lean-ctx chat channels`)",
    )


def _channel_or_404(conn: Any, channel: str) -> None:
    if not channel_exists(conn, channel):
        raise channel_not_found(conn, channel)


def _text(value: str | None, what: str, code: str, limit: int, *, required: bool) -> str | None:
    if value is None or not value.strip():
        if required:
            raise InvalidInput(code, f"the {what} is empty; give a short one-line {what}")
        return None
    value = value.strip()
    if _has_control(value):
        raise InvalidInput(code, f"the {what} must be one line without control characters")
    if len(value) > limit:
        raise InvalidInput(code, f"the {what} is {len(value)} characters long; the limit is {limit}")
    return value


# --- results -----------------------------------------------------------------------------

class ReadResult(msgspec.Struct, frozen=True, kw_only=True):
    channel: str
    reader: str
    messages: list[MessageView]
    cursor: int  # the last seq read, after this read
    previous_cursor: int
    unread: int  # messages for the reader still after the cursor (a bound stopped the read)


class AdapterEventView(msgspec.Struct, frozen=True, kw_only=True):
    type: str  # capability | status
    agent: str
    kind: str  # the event kind recorded
    harness: str
    ts: str  # the adapter's timestamp (the command's when it sent none)
    schema_version: int = 1
    primitives: list[str] | None = None
    status: str | None = None
    detail: str | None = None
    channel: str | None = None


# --- commands ------------------------------------------------------------------------------

class InitChannel(Command, frozen=True):
    name = "chat.init"
    channel: str
    members: list[str] = []
    topic: str | None = None


class PostMessage(Command, frozen=True):
    name = "chat.post"
    title: str
    body: str
    channel: str = DEFAULT_CHANNEL
    to: str = ALL
    category: str = "note"
    reply_to: int | None = None


class ReadMessages(Command, frozen=True):
    """Read the messages for the actor after its cursor (bounds: :mod:`.chat_delivery`)."""

    name = "chat.read"
    channel: str = DEFAULT_CHANNEL
    limit: int | None = DEFAULT_READ_LIMIT  # at most this many messages (None: no count limit)
    max_tokens: int | None = DEFAULT_READ_TOKENS  # at most this much text, as ctx_agent shows it (None: no budget)
    encoding: str | None = None  # the encoding spec max_tokens counts in (None: o200k_base)


class PostAdapterEvent(Command, frozen=True):
    """An adapter-neutral event (schema version 1): ``body`` is the JSON object (text or a
    mapping), validated strictly; ``type`` fills its ``event`` field when absent."""

    name = "chat.event.post"
    body: Union[str, dict[str, Any]]
    type: str | None = None
    channel: str | None = None


def _actor(ctx: CommandContext, what: str, code: str) -> str:
    return canonical_agent(ctx.conn, check_agent(ctx.actor, what, code), project_root=ctx.project)


def agent_not_found(ref: str) -> CommandError:
    return CommandError(
        "AGENT_NOT_FOUND",
        f"no agent {ref!r} in this project: give an agent's id, or its name as the agents list shows it"
        " (ctx_agent action=list, or `lean-ctx agent list`); names are per project, an agent of another"
        " project is reached by its id",
    )


def agent_left(agent: AgentView) -> CommandError:
    return CommandError(
        "AGENT_LEFT",
        f"agent {agent.name} ({agent.agent_id}) left at {agent.left_at} ({agent.left_reason}) and reads no more"
        " messages: see who is here (ctx_agent action=list, or `lean-ctx agent list`), or post to all",
        agent_id=agent.agent_id,
    )


def _recipient(ctx: CommandContext, to: str, sender: str) -> str:
    """``to`` as the id of someone other than ``sender`` who will read it (see the delivery rules)."""
    ref = check_agent(to, "recipient", "CHAT_INVALID_RECIPIENT")
    agent = find_agent(ctx.conn, ref, now=ctx.now, project_root=ctx.project)
    if (agent.agent_id if agent is not None else ref) == sender:
        raise InvalidInput("CHAT_INVALID_RECIPIENT", "a message to yourself is never delivered; use --to all"
                           " or another agent")
    if agent is not None:
        if agent.status == "left":
            raise agent_left(agent)
        return agent.agent_id
    if known_identity(ctx.conn, ref):
        return ref  # an unregistered identity the bus knows (see the delivery rules)
    raise agent_not_found(ref)


def _may_post(ctx: CommandContext, channel: str, sender: str) -> None:
    """Refuse a post to a channel created with members by someone who is neither a member nor
    its creator (``CHAT_NOT_MEMBER``); a channel without members is open to every poster.

    Only posting is gated; reading stays open on purpose. Every agent with the log's file can
    read every event in it (``events tail``, ``poll_events``, export, the HTTP/SSE stream), so
    a member check on ``read`` would hide nothing and would only make the broadcast of a members
    channel harder to follow for those it concerns. Members decide who speaks in a channel;
    what must stay between two agents goes as a directed message, which no other agent's read,
    peek, wait or export ever shows."""
    members, creator = channel_members(ctx.conn, channel)
    if not members or sender in members or sender == creator or (ctx.actor or "").strip() in members:
        return
    shown = ", ".join(members[:10]) + (f" and {len(members) - 10} more" if len(members) > 10 else "")
    raise CommandError(
        "CHAT_NOT_MEMBER",
        f"{sender} is not a member of channel {channel!r}: only its members ({shown}) and its creator"
        f" ({creator}) may post there; ask one of them to pass it on, or post to a channel without members"
        f" (such as general). Reading {channel!r} stays open to you",
        channel=channel, sender=sender, created_by=creator,
    )


@handles(InitChannel, emits=("channel.created",), result=ChannelInfo)
def init_channel(ctx: CommandContext, cmd: InitChannel) -> ChannelInfo:
    channel = check_channel(cmd.channel)
    actor = _actor(ctx, "creator", "CHAT_INVALID_SENDER")
    if channel_created(ctx.conn, channel):
        raise CommandError("CHAT_CHANNEL_EXISTS", f"channel {channel!r} already exists; see the channels with"
                           " ctx_agent action=channels (or `lean-ctx chat channels`)")
    if len(cmd.members) > MAX_MEMBERS:
        raise InvalidInput("CHAT_INVALID_MEMBER", f"{len(cmd.members)} members; the limit is {MAX_MEMBERS}")
    members: list[str] = []
    for m in cmd.members:
        if not m.strip():
            continue
        agent = canonical_agent(ctx.conn, check_agent(m, "member", "CHAT_INVALID_MEMBER"), project_root=ctx.project)
        if agent not in members:
            members.append(agent)
    topic = _text(cmd.topic, "topic", "CHAT_INVALID_TOPIC", MAX_TOPIC, required=False)
    stream = f"channel:{channel}"
    # ``general`` may already hold messages (it needs no init); any other stream must be new
    expected: ExpectedVersion = ANY if channel == DEFAULT_CHANNEL else NO_STREAM
    ctx.emit(stream, ChannelCreated(channel=channel, created_by=actor, topic=topic, members=members),
             expected_version=expected, channel=channel)
    before = channel_info(ctx.conn, channel, reader=actor)  # ``general`` may hold messages already
    return ChannelInfo(name=channel, topic=topic, members=members, created_by=actor, created_at=ctx.ts,
                       implicit=False, messages=before.messages if before else 0, last_seq=last_seq(ctx.conn, channel),
                       unread=before.unread if before else 0, last=before.last if before else None)


@handles(PostMessage, emits=("message.posted",), result=MessageView)
def post_message(ctx: CommandContext, cmd: PostMessage) -> MessageView:
    channel = check_channel(cmd.channel)
    sender = _actor(ctx, "sender", "CHAT_INVALID_SENDER")
    _channel_or_404(ctx.conn, channel)
    _may_post(ctx, channel, sender)
    to = cmd.to.strip()
    if to.lower() == ALL:
        recipient = None
    else:
        recipient = _recipient(ctx, to, sender)
    category = cmd.category.strip().lower()
    if not _CATEGORY.match(category):
        raise InvalidInput(
            "CHAT_INVALID_CATEGORY",
            f"category {cmd.category!r} is not valid: {', '.join(CATEGORIES)}, or a lower-case slug of up to 32"
            " characters",
        )
    title = _text(cmd.title, "title", "CHAT_INVALID_TITLE", MAX_TITLE, required=True)
    if not cmd.body.strip():
        raise InvalidInput("CHAT_EMPTY_BODY",
                           "the message body is empty; pass --body, --body-file, or --body - for stdin")
    size = len(cmd.body.encode("utf-8", "surrogatepass"))
    if size > MAX_BODY_BYTES:
        raise InvalidInput("CHAT_BODY_TOO_LARGE", f"the body is {size} bytes; the limit is {MAX_BODY_BYTES}"
                           " (post a path or a summary instead)")
    if cmd.reply_to is not None and get_message(ctx.conn, channel, cmd.reply_to, reader=sender) is None:
        raise CommandError("CHAT_REPLY_NOT_FOUND", f"there is no message #{cmd.reply_to} in {channel!r} that you can"
                           f" see; see `lean-ctx chat peek --channel {channel}`")
    seq = last_seq(ctx.conn, channel) + 1
    stream = f"channel:{channel}"
    version = ctx.tx.stream_version(stream)
    ctx.emit(
        stream,
        MessagePosted(channel=channel, seq=seq, sender=sender, to=recipient or ALL, category=category,
                      title=title or "", body=cmd.body, reply_to=cmd.reply_to),
        expected_version=version or NO_STREAM,
        to_agent=recipient,
        channel=channel,
    )
    position = ctx.tx.head().position + 1 + len(ctx.pending)  # tool.called first, then this event
    return MessageView(channel=channel, seq=seq, sender=sender, to=recipient or ALL, category=category,
                       title=title or "", body=cmd.body, ts=ctx.ts, position=position, reply_to=cmd.reply_to)


@handles(ReadMessages, emits=("cursor.advanced",), result=ReadResult)
def read_messages(ctx: CommandContext, cmd: ReadMessages) -> ReadResult:
    channel = check_channel(cmd.channel)
    reader = _actor(ctx, "reader", "CHAT_INVALID_READER")
    _channel_or_404(ctx.conn, channel)
    limit, max_tokens, encoding = read_bounds(cmd.limit, cmd.max_tokens, cmd.encoding)
    previous, _ = get_cursor(ctx.conn, reader, channel)
    unread_before = unread_count(ctx.conn, channel, reader)  # after ``previous``, the stored cursor
    messages, stopped = take(ctx.conn, channel, reader, after=previous, limit=limit, max_tokens=max_tokens,
                             encoding=encoding)
    if stopped:
        cursor = messages[-1].seq  # stopped at a bound: what follows stays unread
    else:
        cursor = last_seq(ctx.conn, channel)  # also past messages that are not for the reader
    if cursor > previous:
        stream = f"cursor:{reader}/{channel}"
        version = ctx.tx.stream_version(stream)
        ctx.emit(stream, CursorAdvanced(agent=reader, channel=channel, seq=cursor, previous_seq=previous),
                 expected_version=version or NO_STREAM, to_agent=reader, channel=channel)
    return ReadResult(channel=channel, reader=reader, messages=messages, cursor=max(cursor, previous),
                      previous_cursor=previous, unread=unread_before - len(messages))


# --- adapter-neutral events ----------------------------------------------------------------

@handles(PostAdapterEvent, emits=ADAPTER_KINDS, result=AdapterEventView)
def post_adapter_event(ctx: CommandContext, cmd: PostAdapterEvent) -> AdapterEventView:
    agent = _actor(ctx, "agent", "CHAT_INVALID_SENDER")
    wire = parse_adapter_event(cmd.body, type_=cmd.type, agent=agent, ts=ctx.ts)
    if canonical_agent(ctx.conn, wire.agent, project_root=ctx.project) != agent:
        raise InvalidInput("EVENT_AGENT_MISMATCH", f"the event is about {wire.agent!r} but is posted by {agent!r};"
                           f" post it as that agent (--as {wire.agent})")
    channel = None
    if cmd.channel is not None:
        channel = check_channel(cmd.channel)
        _channel_or_404(ctx.conn, channel)
    if isinstance(wire, CapabilityWire):
        ev: Any = AdapterCapabilityDeclared(agent=agent, harness=wire.harness, primitives=list(wire.primitives),
                                            adapter_ts=wire.ts)
        view = AdapterEventView(type="capability", agent=agent, kind=ev.kind, harness=wire.harness, ts=wire.ts,
                                primitives=list(wire.primitives), channel=channel)
    else:
        ev = AdapterStatusReported(agent=agent, harness=wire.harness, status=wire.status, detail=wire.detail,
                                   adapter_ts=wire.ts)
        view = AdapterEventView(type="status", agent=agent, kind=ev.kind, harness=wire.harness, ts=wire.ts,
                                status=wire.status, detail=wire.detail, channel=channel)
    ctx.emit(f"adapter:{agent}", ev, channel=channel)
    return view


__all__ = [
    "ADAPTER_KINDS",
    "CATEGORIES",
    "DEFAULT_READ_LIMIT",
    "AdapterEventView",
    "InitChannel",
    "PostAdapterEvent",
    "PostMessage",
    "ReadMessages",
    "ReadResult",
    "agent_left",
    "agent_not_found",
    "channel_not_found",
    "check_channel",
]
