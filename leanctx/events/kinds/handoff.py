"""Handoff facts: an agent packed its work into a signed bundle for another agent, and an agent
imported (verified, and possibly applied) such a bundle. Stream ``handoff:<handoff_id>``.

The bundle itself is not stored in the log (it lives in the file the sender wrote); the events
record its id, sender, signer fingerprint, the sha256 ``digest`` of its signed bytes and what it
held, so that a later reader can tell which bundle was created and which was applied.
"""

from __future__ import annotations

from .base import Event


class HandoffCreated(Event, tag="handoff.created"):
    """The actor packed its session, knowledge, workflow state, file refs and diary into a
    handoff bundle signed with its Ed25519 key (``fingerprint``); ``digest`` is the sha256 of
    the signed canonical bytes."""

    handoff_id: str
    sender: str
    session_id: str
    key_id: str
    fingerprint: str
    digest: str
    notes: int = 0
    knowledge: int = 0
    tasks: int = 0
    files: int = 0
    diary: int = 0
    message: str | None = None


class HandoffImported(Event, tag="handoff.imported"):
    """The actor verified a handoff bundle against its trust store and imported it into
    ``session_id``; ``applied`` names what was applied (``session``, ``knowledge``,
    ``workflow``), ``tasks`` the bundle's tasks (``channel/task_id``) when the workflow was
    applied, and ``handed_over`` those of them that passed to the actor (each with its
    ``task.handed_over`` event in the same transaction)."""

    handoff_id: str
    sender: str
    receiver: str
    session_id: str
    key_id: str
    fingerprint: str
    digest: str
    applied: tuple[str, ...] = ()
    knowledge_imported: int = 0
    tasks: tuple[str, ...] = ()
    via: str = "file"  # file | inline | stdin | envelope (events before inline/stdin existed say file)
    handed_over: tuple[str, ...] = ()
