"""Wiring: one object that holds the store, its projections and the command bus."""

from __future__ import annotations

import os
from pathlib import Path

from .commands import CommandBus
from .events import SqliteEventStore
from .projections import Projections, default_projections


class LeanCtx:
    """Open the log at ``db`` with every projection and the command bus."""

    def __init__(self, db: str | os.PathLike[str], **store_options: object) -> None:
        self.db = Path(db)
        self.store = SqliteEventStore(db, **store_options)  # type: ignore[arg-type]
        self.projections = Projections(self.store, default_projections())
        self.bus = CommandBus(self.store, self.projections)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "LeanCtx":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
