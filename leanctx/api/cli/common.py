"""Helpers shared by the CLI verbs."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import typer

from ...identity import agent_identity, session_identity
from .app import State

JSON = typer.Option(False, "--json", help="Print JSON.")


def one_of(*values: str) -> Callable[[str | None], str | None]:
    """An option callback refusing (as a usage error) a value outside ``values``."""

    def check(value: str | None) -> str | None:
        if value is not None and value not in values:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(values)}")
        return value

    return check


def finite_at_least(low: float) -> Callable[[float], float]:
    """An option callback refusing NaN, infinities and values below ``low`` (a usage error)."""

    def check(value: float) -> float:
        if value is not None and not (math.isfinite(value) and value >= low):
            raise typer.BadParameter(f"{value} is not a finite number of at least {low:g}")
        return value

    return check


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
