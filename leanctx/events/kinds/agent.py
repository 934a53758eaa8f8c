"""Agent registry facts.

Two ways of leaving are kept apart: ``agent.deregistered`` is an agent leaving on purpose,
``agent.left`` (reason ``heartbeat_timeout``) is the registry noticing that an agent stopped
heartbeating — recorded once, by the first command that observes it.
"""

from __future__ import annotations

from .base import Event


class AgentRegistered(Event, tag="agent.registered"):
    """An agent joined a project and got an identity. ``public_key`` (base64 of the raw 32-byte
    Ed25519 key) and ``fingerprint`` name the agent's signing key, created at its first
    registration in the registering process's data dir (``keys/<agent_id>.key``): handoffs it
    signs with that key are trusted by importers of this log. The first key recorded since the
    agent last deregistered stays its key. Both are null when the key could not be created or
    read, or when a rejoin brought another key than that one (the registration still happened)."""

    agent_id: str
    name: str
    agent_type: str
    role: str
    project_root: str
    pid: int | None = None
    host: str | None = None
    session_id: str | None = None
    public_key: str | None = None
    fingerprint: str | None = None


class AgentHeartbeat(Event, tag="agent.heartbeat"):
    """An agent said it is still alive (optionally with its status)."""

    agent_id: str
    status: str | None = None


class AgentDeregistered(Event, tag="agent.deregistered"):
    """An agent left on purpose."""

    agent_id: str
    reason: str = "deregistered"


class AgentLeft(Event, tag="agent.left"):
    """An agent missed its heartbeats for longer than the TTL and was recorded as gone
    (reason ``heartbeat_timeout``). Recorded once, by the first command that observed it;
    the agent must register again (same id) to rejoin."""

    agent_id: str
    reason: str = "heartbeat_timeout"
    last_seen: str | None = None  # the heartbeat the agent was last seen at
    ttl_seconds: float | None = None  # the TTL it exceeded
