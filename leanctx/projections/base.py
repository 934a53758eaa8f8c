"""What a projection is.

A projection is a fold of the log into tables it owns: it declares a ``name``, a
``version`` (bump it when its tables or its fold change: the rows are then rebuilt from the
log), the event ``kinds`` it folds, its ``tables`` (name → DDL) and ``apply``. It never
reads the clock: time comes from event timestamps and "now" is a query argument.

``consistency``: ``strong`` projections are applied inside the appending transaction (a
command that decides from them sees every committed event); ``eventual`` ones catch up
before they are read.

``create``/``drop`` with ``temp=True`` work on TEMP tables of the same names (which SQLite
resolves before the file's): a read-only log's throwaway copies (``events.sqlite_readonly``),
where a projection of another version is rebuilt without writing the file.
"""

from __future__ import annotations

import abc
import re
from typing import Any, ClassVar

from ..events import StoredEvent

# the head of a CREATE statement, up to the object's (unqualified) name
_CREATE = re.compile(r"^\s*CREATE\s+(?:VIRTUAL\s+TABLE|TABLE|UNIQUE\s+INDEX|INDEX)\s+(?:IF\s+NOT\s+EXISTS\s+)?",
                     re.IGNORECASE)


def in_temp(ddl: str) -> str:
    """``ddl`` (a CREATE TABLE / VIRTUAL TABLE / INDEX of an unqualified name) made in TEMP."""
    m = _CREATE.match(ddl)
    if m is None:
        raise ValueError(f"not a CREATE TABLE or INDEX statement: {ddl[:80]!r}")
    return ddl[: m.end()] + "temp." + ddl[m.end():]


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

    def create(self, conn: Any, temp: bool = False) -> None:
        for ddl in (*self.tables.values(), *self.indexes):
            conn.execute(in_temp(ddl) if temp else ddl)

    def drop(self, conn: Any, temp: bool = False) -> None:
        schema = "temp." if temp else ""
        for table in self.tables:
            conn.execute(f'DROP TABLE IF EXISTS {schema}"{table}"')
