"""Every event kind lean-ctx knows. Importing this package imports each module in it, which
registers its kinds (one module per family: ``agent.py``, ``tool.py``, ...)."""

from __future__ import annotations

from typing import Union

from ...discovery import import_submodules
from .agent import AgentDeregistered, AgentHeartbeat, AgentRegistered
from .base import Event, kind_of, registry
from .tool import ToolCalled

import_submodules(__name__)


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
