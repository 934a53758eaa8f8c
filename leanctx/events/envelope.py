"""What goes into the log (``NewEvent``) and what comes out of it (``StoredEvent``)."""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from .codec import decode_payload, payload_dict
from .kinds import Event

Consistency = Literal["strong", "eventual"]

# expected_version: ANY, NO_STREAM, or the exact current version (an int >= 1)
ANY: Final = "any"
NO_STREAM: Final = "no_stream"
ExpectedVersion = int | Literal["any", "no_stream"]

# Column order of the events table (payload and hashes last).
COLUMNS: Final = (
    "position",
    "stream",
    "version",
    "kind",
    "schema_version",
    "ts",
    "actor",
    "to_agent",
    "project",
    "channel",
    "consistency",
    "correlation_id",
    "causation_id",
    "idempotency_key",
    "payload",
    "prev_hash",
    "hash",
)


class NewEvent(msgspec.Struct, kw_only=True):
    """An event to append. ``ts`` is taken once by the command; the store fills it if absent."""

    event: Event
    actor: str | None = None
    to_agent: str | None = None
    project: str | None = None
    channel: str | None = None
    consistency: Consistency = "strong"
    correlation_id: str | None = None
    causation_id: int | None = None
    ts: str | None = None


class StoredEvent(msgspec.Struct, frozen=True):
    """One row of the log (fields in table column order)."""

    position: int
    stream: str
    version: int
    kind: str
    schema_version: int
    ts: str
    actor: str | None
    to_agent: str | None
    project: str | None
    channel: str | None
    consistency: str
    correlation_id: str | None
    causation_id: int | None
    idempotency_key: str | None
    payload: bytes
    prev_hash: str
    hash: str

    def data(self) -> Event:
        """The payload decoded into its Struct (old schema versions upcast)."""
        return decode_payload(self.kind, self.schema_version, self.payload)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping with the payload as an object."""
        out = {f: getattr(self, f) for f in COLUMNS}
        out["payload"] = payload_dict(self.payload)
        return out


class AppendResult(msgspec.Struct, frozen=True):
    positions: list[int]
    stream_version: int
    duplicate: bool = False

    @property
    def last_position(self) -> int:
        return self.positions[-1] if self.positions else 0
