"""Agent registry facts."""

from __future__ import annotations

from .base import Event


class AgentRegistered(Event, tag="agent.registered"):
    """An agent joined a project and got an identity."""

    agent_id: str
    name: str
    agent_type: str
    role: str
    project_root: str
    pid: int | None = None
    host: str | None = None
    session_id: str | None = None


class AgentHeartbeat(Event, tag="agent.heartbeat"):
    """An agent said it is still alive (optionally with its status)."""

    agent_id: str
    status: str | None = None


class AgentDeregistered(Event, tag="agent.deregistered"):
    """An agent left on purpose."""

    agent_id: str
    reason: str = "deregistered"
