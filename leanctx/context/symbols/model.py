"""The symbol record shared by the map, signatures and task read modes."""

from __future__ import annotations

import msgspec

__all__ = ["Symbol"]


class Symbol(msgspec.Struct, frozen=True):
    """A declaration: ``line``/``end_line`` are 1-based and inclusive; ``depth`` 0 is top level;
    ``group`` is the line of the Go ``const (…)`` / ``var (…)`` group that declares it, 0 for
    any other declaration (the ``signatures`` mode folds long runs of constants group by group)."""

    name: str
    kind: str  # function, method, class, struct, interface, trait, enum, type, constant, impl, module, ...
    line: int
    end_line: int
    depth: int
    signature: str
    exported: bool = True
    parent: str = ""
    group: int = 0
