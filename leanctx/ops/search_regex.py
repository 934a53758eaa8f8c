"""The regex side of ``ops.search``: compiling a query (smart case, counted-repeat guard,
literal fallback) and finding the text files too large to scan. Split from ``ops.search``, which
re-exports these names."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from ..errors import InvalidInput
from .files import SNIFF_BYTES, FileEntry, is_binary

__all__ = ["MAX_REPEAT_WEIGHT", "_compile", "_repeat_weight", "_too_large"]

_COUNTED = re.compile(r"(?<!\\)\{\s*(\d+)?\s*(?:,\s*(\d+)?\s*)?\}")
MAX_REPEAT_WEIGHT = 10_000


def _repeat_weight(query: str) -> int:
    """The product of the counted repeats of a pattern (``x{1000}`` → 1000): the regex engine
    expands them, so a few large ones exhaust memory before any time budget applies."""
    weight = 1
    for m in _COUNTED.finditer(query):
        weight *= max(int(g) for g in m.groups() if g) if any(m.groups()) else 1
        if weight > MAX_REPEAT_WEIGHT:
            break
    return weight


def _compile(query: str, *, literal_fallback: bool) -> Any:
    import regex  # type: ignore[import-untyped]

    flags = regex.MULTILINE | (0 if any(c.isupper() for c in query) else regex.IGNORECASE)
    problem = None
    if _repeat_weight(query) > MAX_REPEAT_WEIGHT:
        problem = InvalidInput("SEARCH_REGEX_TOO_COMPLEX", f"the pattern's counted repeats ({{n}}) multiply past "
                               f"{MAX_REPEAT_WEIGHT:,}; use smaller counts, or + and *")
    else:
        try:
            return regex.compile(query, flags)
        except (regex.error, OverflowError, RecursionError, MemoryError, ValueError) as exc:
            problem = InvalidInput(
                "SEARCH_INVALID_REGEX",
                f"the pattern does not compile ({exc or type(exc).__name__}); fix it, or search without --regex to"
                " match it literally",
            )
    if literal_fallback:
        return regex.compile(regex.escape(query), flags)
    raise problem


def _too_large(root: str, files: Sequence[FileEntry], limit: int) -> list[FileEntry]:
    """Text files over ``limit`` bytes (a binary one would not be searched anyway)."""
    out = []
    for f in files:
        if f.size <= limit:
            continue
        try:
            with open(os.path.join(root, f.path), "rb") as fh:
                head = fh.read(SNIFF_BYTES)
        except OSError:
            continue
        if not is_binary(head):
            out.append(f)
    return out
