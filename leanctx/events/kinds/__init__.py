"""Every event kind lean-ctx knows. Importing this package registers them all in ``KINDS``."""

from __future__ import annotations

from typing import Union

from . import agent, tool  # noqa: F401  (registration side effect)
from .agent import AgentDeregistered, AgentHeartbeat, AgentRegistered
from .base import Event, kind_of, registry
from .tool import ToolCalled


def event_union() -> object:
    """The tagged union of every registered kind (for decoding a payload of unknown kind)."""
    return Union[tuple(registry().values())]  # type: ignore[return-value]


__all__ = [
    "registry",
    "Event",
    "kind_of",
    "event_union",
    "AgentRegistered",
    "AgentHeartbeat",
    "AgentDeregistered",
    "ToolCalled",
]
