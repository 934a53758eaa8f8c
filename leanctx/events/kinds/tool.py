"""Tool-call records: one per command dispatch, whatever its outcome."""

from __future__ import annotations

from typing import Literal

from .base import Event


class ToolCalled(Event, tag="tool.called"):
    """A command was dispatched. The events it caused carry the same correlation id and
    name this event's position as their causation."""

    command: str
    outcome: Literal["ok", "error"]
    duration_ms: float
    error_code: str | None = None
    error_message: str | None = None
    session_id: str | None = None
    events: int = 0
    result: str | None = None  # JSON of the command's result, kept when dispatched with an idempotency key
    request: str | None = None  # sha256 of the command (name and fields), kept with an idempotency key
