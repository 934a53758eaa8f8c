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
    same kind on the target (the age restarts); a DONE also ends the agent's own claim."""

    target: str
    scent: ScentKind
    agent: str
    intensity: float = 1.0


class ScentReleased(Event, tag="scent.released"):
    """An agent gave up its claim on a target."""

    target: str
    agent: str
