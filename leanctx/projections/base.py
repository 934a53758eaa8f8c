"""What a projection is.

A projection is a fold of the log into tables it owns: it declares a ``name``, a
``version`` (bump it when its tables or its fold change: the rows are then rebuilt from the
log), the event ``kinds`` it folds, its ``tables`` (name → DDL) and ``apply``. It never
reads the clock: time comes from event timestamps and "now" is a query argument.

``consistency``: ``strong`` projections are applied inside the appending transaction (a
command that decides from them sees every committed event); ``eventual`` ones catch up
before they are read.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

from ..events import StoredEvent


class Projection(abc.ABC):
    name: ClassVar[str]
    version: ClassVar[int]
    kinds: ClassVar[frozenset[str]]
    tables: ClassVar[dict[str, str]]
    indexes: ClassVar[tuple[str, ...]] = ()
    consistency: ClassVar[str] = "strong"
    order: ClassVar[int] = 100  # rebuild order among projections (lower first)

    @abc.abstractmethod
    def apply(self, conn: Any, event: StoredEvent) -> None:
        """Fold one event (of one of ``kinds``) into this projection's tables via ``conn``."""

    def create(self, conn: Any) -> None:
        for ddl in self.tables.values():
            conn.execute(ddl)
        for ddl in self.indexes:
            conn.execute(ddl)

    def drop(self, conn: Any) -> None:
        for table in self.tables:
            conn.execute(f'DROP TABLE IF EXISTS "{table}"')
