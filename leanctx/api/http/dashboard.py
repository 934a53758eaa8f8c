"""The dashboard (placeholder: routes land here)."""

from __future__ import annotations

from .routes import RouteSpec

ROUTES: list[RouteSpec] = []
