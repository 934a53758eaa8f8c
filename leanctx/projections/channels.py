"""The message bus read models: channels, their messages, each reader's cursor, and the latest
capability/status each agent's adapter declared.

Visibility is the one rule every query here applies: a *broadcast* (recipient NULL, posted
``to all``) is visible to everyone; a *directed* message only to its recipient and its sender.
Queries take ``reader``; ``reader=None`` is the anonymous view (broadcasts only), so a summary
rendered for nobody in particular never shows a directed message. "For the reader" (what
``read``/``wait`` deliver) is narrower: visible, and not posted by the reader itself.

The default channel ``general`` exists without a ``channel.created`` event.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..events import StoredEvent
from ..events.kinds.chat import (
    AdapterCapabilityDeclared,
    AdapterStatusReported,
    ChannelCreated,
    CursorAdvanced,
    MessagePosted,
)
from .base import Projection

DEFAULT_CHANNEL = "general"
ALL = "all"

_enc = msgspec.json.Encoder()
_list_dec = msgspec.json.Decoder(list[str])


class MessageView(msgspec.Struct, frozen=True, kw_only=True):
    channel: str
    seq: int
    sender: str = msgspec.field(name="from")
    to: str  # an agent id, or "all"
    category: str
    title: str
    body: str
    ts: str
    position: int
    reply_to: int | None = None


class ChannelInfo(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    topic: str | None
    members: list[str]
    created_by: str | None
    created_at: str | None
    implicit: bool  # the default channel, never initialised
    messages: int  # messages visible to the reader
    last_seq: int  # messages in the channel (seq is gap-free)
    unread: int | None = None  # for the reader, after its cursor (None without a reader)
    last: MessageView | None = None  # the last message visible to the reader


class AdapterState(msgspec.Struct, frozen=True, kw_only=True):
    agent: str
    status: str | None = None
    detail: str | None = None
    status_channel: str | None = None
    reported_at: str | None = None
    harness: str | None = None  # of the last capability declaration, else of the last status
    primitives: list[str] | None = None
    declared_at: str | None = None


class Channels(Projection):
    name = "channels"
    version = 1
    kinds = frozenset({"channel.created", "message.posted", "cursor.advanced"})
    tables = {
        "channels": """CREATE TABLE IF NOT EXISTS channels (
            name        TEXT PRIMARY KEY,
            topic       TEXT,
            members     TEXT NOT NULL,
            created_by  TEXT,
            created_at  TEXT NOT NULL,
            position    INTEGER NOT NULL
        )""",
        "channel_messages": """CREATE TABLE IF NOT EXISTS channel_messages (
            channel   TEXT NOT NULL,
            seq       INTEGER NOT NULL,
            position  INTEGER NOT NULL,
            ts        TEXT NOT NULL,
            sender    TEXT NOT NULL,
            recipient TEXT,
            category  TEXT NOT NULL,
            title     TEXT NOT NULL,
            body      TEXT NOT NULL,
            reply_to  INTEGER,
            PRIMARY KEY (channel, seq)
        )""",
        "channel_cursors": """CREATE TABLE IF NOT EXISTS channel_cursors (
            agent     TEXT NOT NULL,
            channel   TEXT NOT NULL,
            seq       INTEGER NOT NULL,
            position  INTEGER NOT NULL,
            ts        TEXT NOT NULL,
            PRIMARY KEY (agent, channel)
        )""",
    }
    indexes = (
        "CREATE INDEX IF NOT EXISTS channel_messages_recipient ON channel_messages (channel, recipient, seq)",
    )

    def apply(self, conn: Any, event: StoredEvent) -> None:
        ev = event.data()
        if isinstance(ev, ChannelCreated):
            conn.execute(
                "INSERT INTO channels (name, topic, members, created_by, created_at, position)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET topic = excluded.topic,"
                " members = excluded.members, created_by = excluded.created_by,"
                " created_at = excluded.created_at, position = excluded.position",
                (ev.channel, ev.topic, _enc.encode(list(ev.members)).decode(), ev.created_by, event.ts,
                 event.position),
            )
        elif isinstance(ev, MessagePosted):
            conn.execute(
                "INSERT INTO channel_messages (channel, seq, position, ts, sender, recipient, category, title,"
                " body, reply_to) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (ev.channel, ev.seq, event.position, event.ts, ev.sender, None if ev.to == ALL else ev.to,
                 ev.category, ev.title, ev.body, ev.reply_to),
            )
        elif isinstance(ev, CursorAdvanced):
            row = conn.execute(
                "SELECT position FROM channel_messages WHERE channel = ? AND seq = ?", (ev.channel, ev.seq)
            ).fetchone()
            conn.execute(
                "INSERT INTO channel_cursors (agent, channel, seq, position, ts) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(agent, channel) DO UPDATE SET seq = excluded.seq, position = excluded.position,"
                " ts = excluded.ts",
                (ev.agent, ev.channel, ev.seq, row[0] if row else 0, event.ts),
            )


class AdapterStates(Projection):
    """The latest capability declaration and status report of each agent."""

    name = "adapter_states"
    version = 1
    kinds = frozenset({"adapter.capability_declared", "adapter.status_reported"})
    tables = {
        "adapter_capabilities": """CREATE TABLE IF NOT EXISTS adapter_capabilities (
            agent       TEXT PRIMARY KEY,
            harness     TEXT NOT NULL,
            primitives  TEXT NOT NULL,
            declared_at TEXT NOT NULL,
            position    INTEGER NOT NULL
        )""",
        "adapter_status": """CREATE TABLE IF NOT EXISTS adapter_status (
            agent       TEXT PRIMARY KEY,
            harness     TEXT NOT NULL,
            status      TEXT NOT NULL,
            detail      TEXT,
            channel     TEXT,
            reported_at TEXT NOT NULL,
            position    INTEGER NOT NULL
        )""",
    }

    def apply(self, conn: Any, event: StoredEvent) -> None:
        ev = event.data()
        if isinstance(ev, AdapterCapabilityDeclared):
            conn.execute(
                "INSERT INTO adapter_capabilities (agent, harness, primitives, declared_at, position)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT(agent) DO UPDATE SET harness = excluded.harness,"
                " primitives = excluded.primitives, declared_at = excluded.declared_at,"
                " position = excluded.position",
                (ev.agent, ev.harness, _enc.encode(list(ev.primitives)).decode(), event.ts, event.position),
            )
        elif isinstance(ev, AdapterStatusReported):
            conn.execute(
                "INSERT INTO adapter_status (agent, harness, status, detail, channel, reported_at, position)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(agent) DO UPDATE SET harness = excluded.harness,"
                " status = excluded.status,"
                " detail = excluded.detail, channel = excluded.channel, reported_at = excluded.reported_at,"
                " position = excluded.position",
                (ev.agent, ev.harness, ev.status, ev.detail, event.channel, event.ts, event.position),
            )


# --- queries ---------------------------------------------------------------------------

_MSG_COLS = "channel, seq, position, ts, sender, recipient, category, title, body, reply_to"


def _message(row: tuple[Any, ...]) -> MessageView:
    channel, seq, position, ts, sender, recipient, category, title, body, reply_to = row
    return MessageView(channel=channel, seq=seq, sender=sender, to=ALL if recipient is None else recipient,
                       category=category, title=title, body=body, ts=ts, position=position, reply_to=reply_to)


def _visible(reader: str | None) -> tuple[str, list[Any]]:
    """Messages ``reader`` may see: broadcasts, plus those to or from it."""
    if reader is None:
        return "recipient IS NULL", []
    return "(recipient IS NULL OR recipient = ? OR sender = ?)", [reader, reader]


def _for(reader: str) -> tuple[str, list[Any]]:
    """Messages delivered to ``reader``: broadcasts and those directed to it, not its own."""
    return "(recipient IS NULL OR recipient = ?) AND sender <> ?", [reader, reader]


def channel_exists(conn: Any, channel: str) -> bool:
    if channel == DEFAULT_CHANNEL:
        return True
    return conn.execute("SELECT 1 FROM channels WHERE name = ?", (channel,)).fetchone() is not None


def channel_created(conn: Any, channel: str) -> bool:
    """Whether ``channel.created`` was recorded for it (``general`` may exist without)."""
    return conn.execute("SELECT 1 FROM channels WHERE name = ?", (channel,)).fetchone() is not None


def channel_members(conn: Any, channel: str) -> tuple[list[str], str | None]:
    """(members, creator) of ``channel`` as its ``channel.created`` recorded them; ``([], None)``
    for a channel never created (``general`` without init)."""
    row = conn.execute("SELECT members, created_by FROM channels WHERE name = ?", (channel,)).fetchone()
    return (_list_dec.decode(row[0]), row[1]) if row else ([], None)


def last_seq(conn: Any, channel: str) -> int:
    return conn.execute("SELECT max(seq) FROM channel_messages WHERE channel = ?", (channel,)).fetchone()[0] or 0


def get_message(conn: Any, channel: str, seq: int, *, reader: str | None = None,
                everything: bool = False) -> MessageView | None:
    """Message ``seq`` of ``channel`` if it exists and ``reader`` may see it (any with ``everything``)."""
    if not 0 < seq < 2**63:  # no message is there (and SQLite's integers end at 2^63 - 1)
        return None
    where, params = ("1", []) if everything else _visible(reader)
    row = conn.execute(
        f"SELECT {_MSG_COLS} FROM channel_messages WHERE channel = ? AND seq = ? AND {where}",
        (channel, seq, *params),
    ).fetchone()
    return _message(row) if row else None


def messages_for(conn: Any, channel: str, reader: str, *, after: int = 0,
                 limit: int | None = None) -> list[MessageView]:
    """Messages for ``reader`` with ``seq > after``, in order (what ``read`` delivers)."""
    where, params = _for(reader)
    sql = f"SELECT {_MSG_COLS} FROM channel_messages WHERE channel = ? AND seq > ? AND {where} ORDER BY seq"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return [_message(r) for r in conn.execute(sql, (channel, after, *params))]


def visible_messages(conn: Any, channel: str, *, reader: str | None = None, everything: bool = False,
                     after: int = 0) -> list[MessageView]:
    """Every message of ``channel`` after ``after`` that ``reader`` may see, in seq order
    (``everything``: all of them, directed ones included — an operator's view)."""
    where, params = ("1", []) if everything else _visible(reader)
    return [
        _message(r)
        for r in conn.execute(
            f"SELECT {_MSG_COLS} FROM channel_messages WHERE channel = ? AND seq > ? AND {where} ORDER BY seq",
            (channel, after, *params),
        )
    ]


def last_messages(conn: Any, channel: str, n: int, *, reader: str | None = None) -> list[MessageView]:
    """The last ``n`` messages of ``channel`` visible to ``reader``, oldest first (deterministic:
    ordered by seq). ``reader=None``: broadcasts only."""
    where, params = _visible(reader)
    rows = conn.execute(
        f"SELECT {_MSG_COLS} FROM channel_messages WHERE channel = ? AND {where} ORDER BY seq DESC LIMIT ?",
        (channel, *params, max(0, int(n))),
    ).fetchall()
    return [_message(r) for r in reversed(rows)]


def recent_messages(conn: Any, n: int) -> list[MessageView]:
    """The last ``n`` messages of every channel, directed ones included (an operator's view),
    oldest first by log position.

    Read through the primary key (channel, seq) rather than by sorting the whole table on
    ``position``: within a channel seq order is log order (seq is ``last_seq + 1`` in the
    appending transaction), so the last ``n`` overall are among the last ``n`` of each channel.
    Channels are found with a skip-scan of the key and visited newest first, and a channel
    whose last message is older than the ``n`` kept so far is not read at all."""
    n = max(0, int(n))
    if not n:
        return []
    channels = conn.execute(
        "WITH RECURSIVE ch(name) AS (SELECT min(channel) FROM channel_messages"
        " UNION ALL SELECT (SELECT min(channel) FROM channel_messages WHERE channel > ch.name) FROM ch"
        " WHERE ch.name IS NOT NULL)"
        " SELECT name, (SELECT position FROM channel_messages m WHERE m.channel = ch.name ORDER BY seq DESC LIMIT 1)"
        " AS last FROM ch WHERE name IS NOT NULL ORDER BY last DESC"
    ).fetchall()
    rows: list[tuple[Any, ...]] = []
    for name, last in channels:
        if len(rows) >= n and last < rows[n - 1][2]:
            break  # every later channel is older still
        rows += conn.execute(
            f"SELECT {_MSG_COLS} FROM channel_messages WHERE channel = ? ORDER BY seq DESC LIMIT ?", (name, n)
        ).fetchall()
        rows.sort(key=lambda r: r[2], reverse=True)
        del rows[n:]
    return [_message(r) for r in reversed(rows)]


def get_cursor(conn: Any, agent: str, channel: str) -> tuple[int, int]:
    """``(seq, position)`` of ``agent``'s cursor in ``channel``: the last seq read and the log
    position of that message; ``(0, 0)`` before the first read."""
    row = conn.execute(
        "SELECT seq, position FROM channel_cursors WHERE agent = ? AND channel = ?", (agent, channel)
    ).fetchone()
    return (row[0], row[1]) if row else (0, 0)


def unread_count(conn: Any, channel: str, reader: str) -> int:
    seq, _ = get_cursor(conn, reader, channel)
    where, params = _for(reader)
    return conn.execute(
        f"SELECT count(*) FROM channel_messages WHERE channel = ? AND seq > ? AND {where}",
        (channel, seq, *params),
    ).fetchone()[0]


def _info(conn: Any, name: str, row: tuple[Any, ...] | None, reader: str | None,
          everything: bool = False) -> ChannelInfo:
    where, params = ("1", []) if everything else _visible(reader)
    posted = last_seq(conn, name)
    visible = posted if everything else conn.execute(  # seq is gap-free: all of them is the last seq
        f"SELECT count(*) FROM channel_messages WHERE channel = ? AND {where}", (name, *params)
    ).fetchone()[0]
    last_row = conn.execute(
        f"SELECT {_MSG_COLS} FROM channel_messages WHERE channel = ? AND {where} ORDER BY seq DESC LIMIT 1",
        (name, *params),
    ).fetchone()
    last = [_message(last_row)] if last_row else []
    topic, members, created_by, created_at = row if row else (None, "[]", None, None)
    return ChannelInfo(
        name=name, topic=topic, members=_list_dec.decode(members), created_by=created_by, created_at=created_at,
        implicit=row is None, messages=visible, last_seq=posted,
        unread=unread_count(conn, name, reader) if reader is not None else None, last=last[0] if last else None,
    )


def channel_info(conn: Any, channel: str, *, reader: str | None = None) -> ChannelInfo | None:
    """One channel (None when unknown; ``general`` always exists). Counts and the last message
    are those visible to ``reader`` (broadcasts only when None)."""
    row = conn.execute(
        "SELECT topic, members, created_by, created_at FROM channels WHERE name = ?", (channel,)
    ).fetchone()
    if row is None and channel != DEFAULT_CHANNEL:
        return None
    return _info(conn, channel, row, reader)


def list_channels(conn: Any, *, reader: str | None = None, everything: bool = False) -> list[ChannelInfo]:
    """Every channel (``general`` included), by name. Counts and the last message are those
    ``reader`` can see (broadcasts only when None), or all of them with ``everything`` (an
    operator's view)."""
    rows = {
        r[0]: r[1:]
        for r in conn.execute("SELECT name, topic, members, created_by, created_at FROM channels")
    }
    names = sorted(set(rows) | {DEFAULT_CHANNEL})
    return [_info(conn, n, rows.get(n), reader, everything) for n in names]


def canonical_agent(conn: Any, ref: str, *, project_root: str | None = None) -> str:
    """``ref`` as an agent id: a registered agent's id is kept, in any project; a registered
    agent's name resolves to its id — among the agents of ``project_root`` when given (names
    repeat per project, so a log shared by several projects holds one ``cursor-dev-1`` each),
    else the newest registration of that name anywhere. A reference nobody registered (or a
    name only another project has) is kept as is."""
    from .agents import find_agent

    agent = find_agent(conn, ref, now=0.0, project_root=project_root)  # ``now`` only feeds the status
    return agent.agent_id if agent is not None else ref


def known_identity(conn: Any, ref: str) -> bool:
    """Whether the bus knows ``ref`` without a registration: a member of a channel, or an
    identity that has posted, read (a cursor) or declared an adapter capability or status."""
    checks = (  # by key first; the scan of the messages' senders last
        "SELECT 1 FROM channel_cursors WHERE agent = ? LIMIT 1",
        "SELECT 1 FROM adapter_status WHERE agent = ?",
        "SELECT 1 FROM adapter_capabilities WHERE agent = ?",
        "SELECT 1 FROM channels, json_each(channels.members) WHERE json_each.value = ? LIMIT 1",
        "SELECT 1 FROM channel_messages WHERE sender = ? LIMIT 1",
    )
    return any(conn.execute(sql, (ref,)).fetchone() is not None for sql in checks)


def adapter_states(conn: Any, agents: list[str] | None = None) -> list[AdapterState]:
    """The latest status and capabilities of each agent (or of ``agents``), by agent."""
    rows: dict[str, dict[str, Any]] = {}
    for agent, harness, status, detail, channel, reported_at in conn.execute(
        "SELECT agent, harness, status, detail, channel, reported_at FROM adapter_status"
    ):
        rows.setdefault(agent, {}).update(harness=harness, status=status, detail=detail, status_channel=channel,
                                          reported_at=reported_at)
    for agent, harness, primitives, declared_at in conn.execute(
        "SELECT agent, harness, primitives, declared_at FROM adapter_capabilities"
    ):
        rows.setdefault(agent, {}).update(harness=harness, primitives=_list_dec.decode(primitives),
                                          declared_at=declared_at)
    wanted = sorted(rows) if agents is None else [a for a in agents if a in rows]
    return [AdapterState(agent=a, **rows[a]) for a in wanted]
