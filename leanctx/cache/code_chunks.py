"""Chunking for the code-search index (pure): windows of at most ``TARGET_LINES`` lines, cut at
the last top-level definition (``def``, ``class``, ``function``, ``fn``, ``func``, ``struct``,
``impl``, a Markdown heading, ... at column 0, with its decorators) that leaves at least
``MIN_LINES`` lines, else at the window's end; camelCase terms split into words; and a safe FTS5
match expression for any query (:func:`match_expression`: terms quoted and ORed, at most
``MAX_TERMS``; a one-letter term only as a phrase with its neighbours).

A change here changes what :mod:`.code_index` holds: its ``ENGINE`` digest covers this file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..events.fts import quote_query

TARGET_LINES = 40
MIN_LINES = 10
MAX_TERMS = 32
SHORT_TERM_CHARS = 1  # a term whose every token is this short is searched only inside a phrase
PHRASE_COLUMNS = "{path body}"  # code_index's columns a short term's phrase is matched in (not ``terms``)

_DEF = re.compile(
    r"(?:(?:export|default|pub(?:\([^)]*\))?|public|private|protected|internal|static|abstract|final|sealed|open|"
    r"async|unsafe|extern|inline|override|data|local)\s+)*"
    r"(?:def|class|function|fn|func|struct|enum|impl|trait|interface|type|module|mod|namespace|object|const|let|var|"
    r"package|typedef|union|macro_rules!|defmodule|defp?|defmacro|sub|proc|fun|val|template|record)\b"
)
_HEADING = re.compile(r"#{1,6}\s")
_IDENT = re.compile(r"(?<![A-Za-z0-9])[A-Za-z][A-Za-z0-9]*")  # not the x20 of 0x20
_TOKEN = re.compile(r"[^\W_]+")  # FTS5's unicode61 tokens, near enough: letters and digits
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
    """camelCase / PascalCase identifiers of ``text`` split into lower-case words, one a line
    (a hex literal such as ``0x20`` is not an identifier: no ``x``)."""
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


def short_term(term: str) -> bool:
    """A query term of one-letter tokens (``x``, ``k,``, ``0``), not a prefix query (``x*``)."""
    words = _TOKEN.findall(term)
    return bool(words) and all(len(w) <= SHORT_TERM_CHARS for w in words) and not term.endswith("*")


def _short(piece: str) -> bool:
    """``short_term`` of a quoted term (``quote_query``: ``"x"``, ``"pre"*``)."""
    return not piece.endswith("*") and short_term(piece[1:-1])


def _runs(short: list[bool]) -> list[tuple[int, int]]:
    """``[lo, hi)`` of each run of short terms with the term either side."""
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(short):
        if not short[i]:
            i += 1
            continue
        j = i
        while j < len(short) and short[j]:
            j += 1
        out.append((max(i - 1, 0), min(j + 1, len(short))))
        i = j
    return out


def _pieces(query: str) -> list[str]:
    return (quote_query(query) or "").split()  # one quoted term each: quotes hold no space


def short_phrases(query: str) -> list[str]:
    """The phrases :func:`match_expression` requires, as text (``if n``); none when the query
    has no one-letter term."""
    terms = _pieces(query)[:MAX_TERMS]
    return [" ".join(t.rstrip("*")[1:-1].replace('""', '"') for t in terms[lo:hi])
            for lo, hi in _runs([_short(t) for t in terms])]


def match_expression(query: str) -> str | None:
    """A safe FTS5 expression for any string: its terms quoted (``leanctx.events.fts``) and ORed.

    A one-letter term would match nearly every chunk (an f-string's ``f``, ``i`` of a loop), so
    each run of such terms is joined with the terms either side into one FTS5 phrase
    (``"return" + "x"``: adjacent tokens, in order), and the phrases are required, the words no
    phrase took staying an OR; the whole query, as a phrase too, is ORed into the last part:
    it implies every part, so it ranks (``bm25()`` sums over every phrase of the expression)
    without changing what matches. ``except Exception as e`` is
    ``({path body} : "as" + "e") AND ("except" OR "Exception" OR {path body} : "except" +
    "Exception" + "as" + "e")``. A query of short terms only is their phrase (``x = 0``:
    ``"x" + "0"``); a single letter is searched as it is. Phrases are matched in the path and
    the text, not in ``terms``: its split identifiers follow one another, so ``NoReturn`` and
    ``XFail`` would read ``... no return x fail ...``."""
    pieces = _pieces(query)
    if not pieces:
        return None
    if not any(_short(t) for t in pieces):
        return " OR ".join(list(dict.fromkeys(pieces))[:MAX_TERMS])
    terms = pieces[:MAX_TERMS]
    runs = _runs([_short(t) for t in terms])

    def phrase(lo: int, hi: int) -> str:
        return f"{PHRASE_COLUMNS} : " + " + ".join(terms[lo:hi]) if hi - lo > 1 else terms[lo]

    taken = {k for lo, hi in runs for k in range(lo, hi)}
    rest = list(dict.fromkeys(t for k, t in enumerate(terms) if k not in taken))
    parts = list(dict.fromkeys(phrase(lo, hi) for lo, hi in runs))
    if rest:
        parts.append(" OR ".join(rest))
    if len(parts) == 1:
        return parts[0]
    parts[-1] += " OR " + phrase(0, len(terms))
    return " AND ".join(f"({p})" for p in parts)
