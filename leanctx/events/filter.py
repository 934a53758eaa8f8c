"""TopicFilter: which events a reader wants.

- ``kinds``: exact kinds, or family patterns ending in ``.*`` (``agent.*``).
- ``actor``: who appended it.
- ``to_agent``: the reader's identity. Directed events reach only their target, broadcasts
  (``to_agent`` NULL) reach everyone; with ``to_agent`` unset no recipient filtering is done.
- ``channel``, ``stream_prefix``, ``consistency``: exact match / prefix / exact.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .envelope import StoredEvent


class TopicFilter(msgspec.Struct, kw_only=True, frozen=True):
    kinds: tuple[str, ...] | None = None
    actor: str | None = None
    to_agent: str | None = None
    channel: str | None = None
    stream_prefix: str | None = None
    consistency: str | None = None

    def is_empty(self) -> bool:
        return not (self.kinds or self.actor or self.to_agent or self.channel or self.stream_prefix or self.consistency)

    def to_sql(self, prefix: str = "") -> tuple[str, list[Any]]:
        """A WHERE fragment (without ``WHERE``; ``1`` when empty) and its bindings; ``prefix``
        qualifies the column names (``"e."`` in a join)."""
        parts: list[str] = []
        params: list[Any] = []
        if self.kinds:
            exact = [k for k in self.kinds if not k.endswith(".*")]
            prefixes = [k[:-1] for k in self.kinds if k.endswith(".*")]
            ors: list[str] = []
            if exact:
                ors.append(f"{prefix}kind IN ({','.join('?' * len(exact))})")
                params.extend(exact)
            for p in prefixes:
                ors.append(f"substr({prefix}kind, 1, ?) = ?")
                params.extend([len(p), p])
            parts.append("(" + " OR ".join(ors) + ")")
        if self.actor is not None:
            parts.append(f"{prefix}actor = ?")
            params.append(self.actor)
        if self.to_agent is not None:
            parts.append(f"({prefix}to_agent IS NULL OR {prefix}to_agent = ?)")
            params.append(self.to_agent)
        if self.channel is not None:
            parts.append(f"{prefix}channel = ?")
            params.append(self.channel)
        if self.stream_prefix is not None:
            parts.append(f"substr({prefix}stream, 1, ?) = ?")
            params.extend([len(self.stream_prefix), self.stream_prefix])
        if self.consistency is not None:
            parts.append(f"{prefix}consistency = ?")
            params.append(self.consistency)
        return (" AND ".join(parts) or "1"), params

    def matches(self, e: StoredEvent) -> bool:
        if self.kinds and not any(
            (e.kind.startswith(k[:-1]) if k.endswith(".*") else e.kind == k) for k in self.kinds
        ):
            return False
        if self.actor is not None and e.actor != self.actor:
            return False
        if self.to_agent is not None and e.to_agent is not None and e.to_agent != self.to_agent:
            return False
        if self.channel is not None and e.channel != self.channel:
            return False
        if self.stream_prefix is not None and not e.stream.startswith(self.stream_prefix):
            return False
        if self.consistency is not None and e.consistency != self.consistency:
            return False
        return True
