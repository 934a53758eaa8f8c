"""The HTTP API: REST routes, SSE streams, A2A and metrics over the command bus.

One concept per module: ``config`` (what the server is started with), ``security`` (bearer
token, Host/Origin allowlist, rate limit), ``tokens`` (agent tokens), ``bodies`` (request
parsing), ``responses`` (the error shape), ``hub`` (one thread that follows the log for every
SSE client), ``agents``, ``events``, ``commands``, ``context``, ``a2a``, ``metrics``,
``openapi``, ``app`` (the wiring) and ``server`` (uvicorn). Like the CLI it translates; the
command bus decides.
"""

from __future__ import annotations

from .config import ServerConfig

__all__ = ["ServerConfig", "create_app"]


def create_app(config: ServerConfig):  # type: ignore[no-untyped-def]
    """The Starlette application for ``config`` (imported lazily: Starlette is not needed to
    read the configuration)."""
    from .app import create_app as _create

    return _create(config)
