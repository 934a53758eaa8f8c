"""Full-text search helpers: what text of an event is indexed, and safe query strings.

User input never reaches FTS5's query syntax: each whitespace-separated term is always
quoted as a string (``"`` doubled inside), so quotes, ``NEAR(``, ``*``, ``AND``, unbalanced
parentheses and the empty string are all safe. A term ending in ``*`` (after at least one
word character) becomes a prefix query, the one piece of syntax we keep on purpose.
"""

from __future__ import annotations

from typing import Any

from .codec import payload_dict


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k != "kind":
                _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out.append(str(value))


def searchable_text(
    kind: str, stream: str, actor: str | None, to_agent: str | None, channel: str | None, payload: bytes
) -> tuple[str, str, str, str]:
    """(kind, stream, who, body) columns for one event."""
    body: list[str] = []
    try:
        _strings(payload_dict(payload), body)
    except Exception:  # a payload that is not a JSON object is still indexed by its envelope
        pass
    who = " ".join(x for x in (actor, to_agent, channel) if x)
    return kind, stream, who, " ".join(body)


def _has_word(term: str) -> bool:
    return any(ch.isalnum() for ch in term)


def _quote(term: str) -> str:
    # apsw.fts5query.quote leaves bare words such as AND / OR / NOT unquoted, which FTS5
    # then parses as operators; a string is always a phrase.
    return '"' + term.replace('"', '""') + '"'


def quote_query(query: str) -> str | None:
    """A safe FTS5 query for any user string (terms ANDed), or None when nothing is searchable."""
    parts: list[str] = []
    # FTS5 strings cannot hold NUL (or other C0 controls): they separate terms like spaces
    query = "".join(" " if ord(ch) < 32 else ch for ch in query)
    for term in query.split():
        prefix = term.endswith("*") and _has_word(term.rstrip("*"))
        term = term.rstrip("*") if prefix else term
        if not _has_word(term):
            continue
        parts.append(_quote(term) + ("*" if prefix else ""))
    return " ".join(parts) if parts else None
