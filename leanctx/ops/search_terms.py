"""How ``ops.search`` uses the query's words outside the code index (pure): the line a chunk hit
is shown at, and the pattern of the fused search's regex half.

The best line of a chunk is the first holding the most query terms (each as a substring, so
``parse`` counts on ``parseConfig``). A query with a one-letter term (``cache.code_chunks.
short_term``: ``x``, ``n``, ``0``) is matched by the index as phrases (``short_phrases``), and
here too: its best line is first the one holding the whole query as a phrase (``return x`` on
``return x``, not on the ``Returns exactly ...`` above it), then the one holding more of those
phrases, then more terms, a one-letter term counting only as a word of its own. The regex half
of ``auto`` matches a one-letter word at either end of the query as a whole word (``\\b``), so
``if n`` is not ``if not`` nor ``return x`` ``return xs``.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from ..cache.code_chunks import SHORT_TERM_CHARS, short_phrases, short_term
from ..errors import InvalidInput
from .search_regex import _compile

_WORD = re.compile(r"\w+")
_TOKEN = re.compile(r"[^\W_]+")  # the index's tokens (FTS5 unicode61), near enough


class QueryTerms(NamedTuple):
    words: list[str]  # distinct, lower case, longest first
    whole: list[str]  # with a one-letter term: the query's tokens in order; else empty
    phrases: list[list[str]]  # the tokens of the phrases the index requires (``short_phrases``)


def query_terms(query: str) -> QueryTerms:
    words = sorted({w.lower() for w in _WORD.findall(query)}, key=len, reverse=True)
    phrases = [_TOKEN.findall(p.lower()) for p in short_phrases(query)]
    return QueryTerms(words, _TOKEN.findall(query.lower()) if phrases else [], phrases)


def _has(toks: list[str], phrase: list[str]) -> bool:
    k = len(phrase)
    return k > 0 and any(toks[i:i + k] == phrase for i in range(len(toks) - k + 1))


def best_line(lines: list[str], start: int, end: int, terms: QueryTerms) -> int:
    """The line (1-based, in ``start``-``end``) a chunk hit is shown at (see the module doc); the
    chunk's first non-blank line when no line holds a query term."""
    best, best_key, first_text = start, (0, 0, 0), 0
    for n in range(start, min(end, len(lines)) + 1):
        low = lines[n - 1].lower()
        if not first_text and low.strip():
            first_text = n
        toks = _TOKEN.findall(low) if terms.phrases else []
        key = (int(_has(toks, terms.whole)), sum(1 for p in terms.phrases if _has(toks, p)),
               sum(1 for t in terms.words if (t in toks if toks and len(t) <= SHORT_TERM_CHARS else t in low)))
        if key > best_key:
            best, best_key = n, key
    return best if best_key[2] else (first_text or start)


def auto_pattern(query: str) -> Any:
    """The regex half of ``auto``: the query as a pattern (else literally), with ``\\b`` at an
    end where it is a one-letter word."""
    terms = query.split()
    pre = r"\b" if short_term(terms[0]) and _WORD.match(query[0]) else ""
    post = r"\b" if short_term(terms[-1]) and _WORD.match(query[-1]) else ""
    if not (pre or post):
        return _compile(query, literal_fallback=True)
    try:
        return _compile(f"{pre}(?:{query}){post}", literal_fallback=False)
    except InvalidInput:  # not a pattern: the words literally, with the same edges
        import regex  # type: ignore[import-untyped]

        return _compile(pre + regex.escape(query) + post, literal_fallback=True)
