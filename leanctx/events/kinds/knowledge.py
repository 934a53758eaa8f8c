"""Knowledge facts: what a project knows, key by key (stream ``knowledge:<key>``)."""

from __future__ import annotations

from .base import Event


class KnowledgeRemembered(Event, tag="knowledge.remembered"):
    """An agent stated a fact: ``key`` in ``category`` has ``value`` (with ``confidence`` 0..1
    and an optional ``source``). The writing agent is the event's actor. ``conflict_window_s``
    is fixed by the command, so whether this write conflicts with the previous one (another
    agent, another value, within the window) is a pure function of the log."""

    key: str
    category: str
    value: str
    confidence: float
    source: str | None = None
    conflict_window_s: float = 600.0


class KnowledgeRemoved(Event, tag="knowledge.removed"):
    """A fact was forgotten (its key no longer answers recall)."""

    key: str


class KnowledgeResolved(Event, tag="knowledge.resolved"):
    """A flagged conflict on ``key`` was settled: ``value`` is the one kept."""

    key: str
    value: str


class KnowledgeConsolidated(Event, tag="knowledge.consolidated"):
    """Near-duplicate facts of one category were merged into ``key`` (stream of the kept key):
    every key in ``merged`` is gone, ``key`` keeps its value and takes ``confidence`` (the
    highest of the group); ``similarity`` is the lowest token overlap (Jaccard) in the group."""

    key: str
    merged: tuple[str, ...]
    category: str
    confidence: float
    similarity: float
