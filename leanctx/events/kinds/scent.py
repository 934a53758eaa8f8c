"""Scent field facts (stigmergy): marks agents leave on targets, and claims they give up.

The scent kind is carried in the field ``scent`` (``kind`` is the envelope's tag).
Intensity decays at read time (``leanctx.projections.scent``); the events only record the
deposit (its intensity and, on the envelope, its ``ts``).
"""

from __future__ import annotations

from typing import Literal

from .base import Event

ScentKind = Literal["CLAIMED", "DONE", "STUCK", "HOT", "AVOID"]


class ScentDeposited(Event, tag="scent.deposited"):
    """An agent left a scent mark (CLAIMED, DONE, STUCK, HOT or AVOID) on a target (a
    project-relative file path or a task id). It replaces that agent's previous mark of the
    same kind on the target (the age restarts); a DONE also ends the agent's own claim.
    ``took_over_from``: on a CLAIMED, the agent whose claim on the target this one replaced
    (a lapsed claim, or one whose holder was stale or had left); null otherwise."""

    target: str
    scent: ScentKind
    agent: str
    intensity: float = 1.0
    took_over_from: str | None = None


class ScentReleased(Event, tag="scent.released"):
    """An agent's claim on a target ended. ``reason`` null: the agent released it itself;
    ``agent_deregistered`` / ``heartbeat_timeout``: the agent left, and every claim it held was
    released with its departure; ``taken_over``: another agent (the event's actor) claimed the
    target while this claim's holder was stale or gone. ``claim_project``: the project the
    claim was made in, when given (a departure releases claims wherever they were made);
    null means the event's own project."""

    target: str
    agent: str
    reason: str | None = None
    claim_project: str | None = None
