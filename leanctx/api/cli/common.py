"""Helpers shared by the CLI verbs."""

from __future__ import annotations

from typing import Any

import typer

from ...identity import agent_identity, session_identity
from .app import State

JSON = typer.Option(False, "--json", help="Print JSON.")


def dispatch(st: State, command: Any, *, actor: str | None = None, now: float | None = None) -> Any:
    """Dispatch ``command`` as this process's agent, in this project; returns the result value."""
    lc = st.open()
    return lc.bus.dispatch(
        command,
        actor=actor or agent_identity(),
        session_id=session_identity(),
        project=st.project_root(),
        now=now,
    ).value
