"""Read models folded from the log. Every ``Projection`` subclass with a ``name`` defined in a
module of this package is maintained; ``order`` (default 100) then the name fix the order."""

from ..discovery import import_submodules
from .base import Projection
from .runner import Projections, digest_tables, replay_into


def _concrete(cls: type[Projection]) -> list[type[Projection]]:
    out = []
    for sub in cls.__subclasses__():
        if "name" in sub.__dict__ and sub.__module__.startswith(__name__ + "."):
            out.append(sub)
        out.extend(_concrete(sub))
    return out


def default_projections() -> list[Projection]:
    """Every projection lean-ctx maintains, in order."""
    import_submodules(__name__)
    classes = sorted(set(_concrete(Projection)), key=lambda c: (c.order, c.name))
    return [c() for c in classes]


from .agents import AgentRegistry  # noqa: E402

__all__ = ["AgentRegistry", "Projection", "Projections", "default_projections", "digest_tables", "replay_into"]
