"""Read models folded from the log."""

from .agents import AgentRegistry
from .base import Projection
from .runner import Projections, digest_tables, replay_into


def default_projections() -> list[Projection]:
    """Every projection lean-ctx maintains, in dependency order."""
    return [AgentRegistry()]


__all__ = ["AgentRegistry", "Projection", "Projections", "default_projections", "digest_tables", "replay_into"]
