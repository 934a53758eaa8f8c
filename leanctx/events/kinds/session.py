"""Session facts: what an agent's conversation is doing — its task and step, what it found,
what it decided — so that a compacted or restarted context can be given back (the resume block).

Stream ``session:<session_id>``. File refs (F1..Fn) and archive ids of a session are not
repeated here: they come from ``file.read`` / ``shell.ran`` / ``search.ran`` events.
"""

from __future__ import annotations

from .base import Event


class SessionTaskSet(Event, tag="session.task_set"):
    """The session's current task, and how far along it is (step ``step`` of ``total``)."""

    session_id: str
    agent_id: str
    task: str
    step: int = 0
    total: int = 0


class SessionNoted(Event, tag="session.noted"):
    """A finding or a decision was recorded in the session."""

    session_id: str
    agent_id: str
    note: str  # finding | decision
    text: str
    path: str | None = None


class SessionSaved(Event, tag="session.saved"):
    """The session's state was saved under a name (a snapshot taken at this position)."""

    session_id: str
    agent_id: str
    name: str


class SessionLoaded(Event, tag="session.loaded"):
    """A saved snapshot replaced the session's task, findings and decisions."""

    session_id: str
    agent_id: str
    name: str


class SessionReset(Event, tag="session.reset"):
    """The session's task, findings and decisions were cleared."""

    session_id: str
    agent_id: str


class SessionContextLost(Event, tag="session.context_lost"):
    """The conversation lost what it had been sent: its client compacted or reset its context
    (``reason``: ``compaction`` when the MCP server saw the client's call counter lag, see
    ``leanctx.resume.compaction_gap``; ``precompact`` from the PreCompact hook). From here on no
    read of the conversation is answered with an "unchanged" stub for content sent before, and
    ``diff`` has no base: the deliveries projection forgets what the conversation received.
    ``call`` is the conversation's call number where the loss was seen (MCP), if known."""

    session_id: str
    agent_id: str
    reason: str
    call: int | None = None
