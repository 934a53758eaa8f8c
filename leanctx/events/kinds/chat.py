"""Message bus facts: channels, messages, read cursors, and adapter-neutral capability/status.

Streams: ``channel:<name>`` (``channel.created`` and every ``message.posted`` of the channel),
``cursor:<agent>/<channel>`` (one reader's cursor in one channel), ``adapter:<agent>`` (what an
adapter declares about itself). Messages carry their own per-channel, gap-free ``seq``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Literal, get_args

import msgspec

from ...errors import InvalidInput
from .base import Event

Primitive = Literal[
    "messages", "cursors", "wait", "tasks", "dependencies", "leases", "path_locks", "state_summary"
]
AdapterStatus = Literal["ready", "busy", "idle", "blocked", "stopped"]


class ChannelCreated(Event, tag="channel.created"):
    """A channel was opened with a topic and its members (``general`` exists without one)."""

    channel: str
    created_by: str
    topic: str | None = None
    members: list[str] = []


class MessagePosted(Event, tag="message.posted"):
    """A message was posted to a channel: to one agent (the event's ``to_agent``) or to ``all``
    (a broadcast). ``seq`` numbers the channel's messages from 1 without gaps."""

    channel: str
    seq: int
    sender: str = msgspec.field(name="from")
    to: str  # an agent id, or "all"
    category: str
    title: str
    body: str
    reply_to: int | None = None


class CursorAdvanced(Event, tag="cursor.advanced"):
    """An agent read a channel up to ``seq`` (its messages up to there are delivered)."""

    agent: str
    channel: str
    seq: int
    previous_seq: int = 0


class AdapterCapabilityDeclared(Event, tag="adapter.capability_declared"):
    """An agent's adapter (its harness: claude-code, cursor, ...) declared which coordination
    primitives it supports (adapter-neutral event ``capability``, schema version 1)."""

    agent: str
    harness: str
    primitives: list[Primitive]
    adapter_ts: str | None = None  # the adapter's own timestamp, as sent


class AdapterStatusReported(Event, tag="adapter.status_reported"):
    """An agent reported its status: ready, busy, idle, blocked or stopped (adapter-neutral
    event ``status``, schema version 1)."""

    agent: str
    harness: str
    status: AdapterStatus
    detail: str | None = None
    adapter_ts: str | None = None


# --- the adapter-neutral wire format (schema version 1) ------------------------------------
# What adapters send (agent-chat's format and codes): {"schema_version": 1, "event":
# "capability" | "status", "agent", "harness", "ts", "primitives"} or {..., "status", "detail"}.

ADAPTER_SCHEMA_VERSION = 1
ADAPTER_EVENT_TYPES = ("capability", "status")
PRIMITIVES: tuple[str, ...] = get_args(Primitive)
STATUSES: tuple[str, ...] = get_args(AdapterStatus)
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


class CapabilityWire(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    schema_version: int
    event: Literal["capability"]
    agent: str
    harness: str
    ts: str
    primitives: list[Primitive]


class StatusWire(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    schema_version: int
    event: Literal["status"]
    agent: str
    harness: str
    ts: str
    status: AdapterStatus
    detail: str | None = None


def _refuse(code: str, message: str) -> InvalidInput:
    return InvalidInput(code, message)


def parse_adapter_event(body: str | bytes | dict[str, Any], *, type_: str | None = None,
                        agent: str | None = None, ts: str | None = None) -> CapabilityWire | StatusWire:
    """Validate an adapter-neutral event strictly (unknown fields or values → ``EVENT_*``).

    ``type_``, ``agent`` and ``ts`` fill ``event``, ``agent`` and ``ts`` when the body leaves
    them out (and ``schema_version`` defaults to 1); a value the body gives must be valid, and
    ``event`` must agree with ``type_``."""
    if isinstance(body, dict):
        data = dict(body)
    else:
        try:
            data = msgspec.json.decode(body)
        except msgspec.DecodeError as exc:
            raise _refuse("EVENT_MALFORMED_BODY", f"the event is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise _refuse("EVENT_INVALID_RECORD", "an event must be a JSON object")
    version = data.setdefault("schema_version", ADAPTER_SCHEMA_VERSION)
    if type(version) is not int or version != ADAPTER_SCHEMA_VERSION:
        raise _refuse("EVENT_UNSUPPORTED_VERSION",
                      f"schema_version {version!r} is not supported; this lean-ctx speaks 1")
    if type_ is not None and data.setdefault("event", type_) != type_:
        raise _refuse("EVENT_INVALID_TYPE", f"the body says event {data['event']!r} but --type is {type_!r}")
    kind = data.get("event")
    if kind not in ADAPTER_EVENT_TYPES:
        raise _refuse("EVENT_INVALID_TYPE", f"event must be capability or status, not {kind!r}")
    if agent is not None:
        data.setdefault("agent", agent)
    if ts is not None:
        data.setdefault("ts", ts)
    try:
        wire: CapabilityWire | StatusWire = (
            msgspec.convert(data, CapabilityWire) if kind == "capability" else msgspec.convert(data, StatusWire)
        )
    except msgspec.ValidationError as exc:
        text = str(exc)
        if "unknown field" in text:
            code = "EVENT_UNKNOWN_FIELD"
        elif "missing required field" in text:
            code = "EVENT_REQUIRED_FIELD_MISSING"
        elif "$.primitives" in text:
            code = "EVENT_UNKNOWN_PRIMITIVE" if "Invalid enum value" in text else "EVENT_INVALID_PRIMITIVES"
        elif "$.status" in text:
            code = "EVENT_INVALID_STATUS"
        elif "$.ts" in text:
            code = "EVENT_INVALID_TIMESTAMP"
        else:
            code = "EVENT_INVALID_TEXT"
        raise _refuse(code, f"{kind} event: {text}") from None
    for field in ("agent", "harness"):
        if not _SAFE.match(getattr(wire, field)):
            raise _refuse("EVENT_INVALID_TEXT", f"{field} {getattr(wire, field)!r} must be 1-128 letters, digits,"
                          " '.', '_', ':' or '-'")
    if not _ISO.match(wire.ts):
        raise _refuse("EVENT_INVALID_TIMESTAMP", f"ts {wire.ts!r} must be ISO-8601 with an offset (or Z)")
    if isinstance(wire, CapabilityWire):
        if not wire.primitives:
            raise _refuse("EVENT_INVALID_PRIMITIVES", f"list at least one primitive of: {', '.join(PRIMITIVES)}")
        if len(set(wire.primitives)) != len(wire.primitives):
            raise _refuse("EVENT_DUPLICATE_PRIMITIVE", "each primitive may be listed once")
    elif wire.detail is not None and (len(wire.detail) > 500 or any(
            unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") for c in wire.detail)):
        raise _refuse("EVENT_INVALID_TEXT", "detail must be one line of at most 500 characters")
    return wire


_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|z|[+-]\d{2}:\d{2})$")
