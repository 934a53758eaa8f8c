"""Small helpers over tree-sitter nodes, shared by the symbol walkers."""

from __future__ import annotations

from typing import Any

__all__ = ["contains", "find", "first", "line_of"]


def line_of(src: bytes, offset: int) -> int:
    """The 1-based line of a byte offset."""
    return src.count(b"\n", 0, offset) + 1


def first(node: Any, types: set[str] | frozenset[str]) -> Any | None:
    """The first named child of one of ``types``."""
    for c in node.named_children:
        if c.type in types:
            return c
    return None


def find(node: Any, types: set[str] | frozenset[str], depth: int) -> Any | None:
    """The first descendant of one of ``types``, at most ``depth`` levels below the children."""
    if depth < 0:
        return None
    for c in node.named_children:
        if c.type in types:
            return c
        got = find(c, types, depth - 1)
        if got is not None:
            return got
    return None


def contains(node: Any, types: frozenset[str], depth: int) -> bool:
    return find(node, types, depth) is not None
