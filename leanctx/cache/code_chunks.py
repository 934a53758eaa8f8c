"""Chunking for the code-search index (pure): windows of at most ``TARGET_LINES`` lines, cut at
the last top-level definition (``def``, ``class``, ``function``, ``fn``, ``func``, ``struct``,
``impl``, a Markdown heading, ... at column 0, with its decorators) that leaves at least
``MIN_LINES`` lines, else at the window's end; camelCase terms split into words; and a safe FTS5
match expression for any query (terms quoted and ORed, at most ``MAX_TERMS``).

A change here changes what :mod:`.code_index` holds: its ``ENGINE`` digest covers this file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..events.fts import quote_query

TARGET_LINES = 40
MIN_LINES = 10
MAX_TERMS = 32

_DEF = re.compile(
    r"(?:(?:export|default|pub(?:\([^)]*\))?|public|private|protected|internal|static|abstract|final|sealed|open|"
    r"async|unsafe|extern|inline|override|data|local)\s+)*"
    r"(?:def|class|function|fn|func|struct|enum|impl|trait|interface|type|module|mod|namespace|object|const|let|var|"
    r"package|typedef|union|macro_rules!|defmodule|defp?|defmacro|sub|proc|fun|val|template|record)\b"
)
_HEADING = re.compile(r"#{1,6}\s")
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def boundaries(lines: Sequence[str]) -> list[int]:
    """0-based indexes of lines that start a top-level definition (decorators included)."""
    out: list[int] = []
    for i, line in enumerate(lines):
        if not line or line[0].isspace():
            continue
        if _DEF.match(line) or _HEADING.match(line):
            j = i
            while j > 0 and lines[j - 1].startswith(("@", "#[")):
                j -= 1
            if not out or out[-1] != j:
                out.append(j)
    return out


def chunk_spans(lines: Sequence[str], target: int = TARGET_LINES, min_lines: int = MIN_LINES) -> list[tuple[int, int]]:
    """(start_line, end_line) 1-based inclusive windows covering ``lines``."""
    n = len(lines)
    bounds = boundaries(lines)
    spans: list[tuple[int, int]] = []
    start = 0
    k = 0
    while start < n:
        limit = start + target
        if limit >= n:
            spans.append((start + 1, n))
            break
        cut = limit
        while k < len(bounds) and bounds[k] <= start:
            k += 1
        best = None
        j = k
        while j < len(bounds) and bounds[j] <= limit:
            if bounds[j] >= start + min_lines:
                best = bounds[j]
            j += 1
        if best is not None:
            cut = best
        spans.append((start + 1, cut))
        start = cut
    return spans


def split_terms(text: str) -> str:
    """camelCase / PascalCase identifiers of ``text`` split into lower-case words."""
    out: set[str] = set()
    for ident in set(_IDENT.findall(text)):
        parts = _CAMEL.findall(ident)
        if len(parts) > 1:
            out.add(" ".join(p.lower() for p in parts))
    return "\n".join(sorted(out))


def chunk_text(text: str) -> list[tuple[int, int, str]]:
    """(start_line, end_line, body) for the non-blank windows of ``text``."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out = []
    for s, e in chunk_spans(lines):
        body = "\n".join(lines[s - 1:e])
        if body.strip():
            out.append((s, e, body))
    return out


def match_expression(query: str) -> str | None:
    """A safe FTS5 expression for any string: its terms quoted (``leanctx.events.fts``) and ORed."""
    pieces: list[str] = []
    for term in query.split():
        q = quote_query(term)
        if q and q not in pieces:
            pieces.append(q if " " not in q else f"({q})")
        if len(pieces) >= MAX_TERMS:
            break
    return " OR ".join(pieces) if pieces else None
