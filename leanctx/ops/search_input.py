"""The arguments of ctx_search, checked before anything is listed, indexed or recorded (every
surface calls ``ops.search.search``, so every surface refuses the same way, with the same code)."""

from __future__ import annotations

from ..errors import InvalidInput

__all__ = ["MAX_GLOB_CHARS", "MAX_LIMIT", "MAX_QUERY_CHARS", "METHODS", "check_glob", "check_input"]

METHODS = ("auto", "regex", "bm25", "semantic")
MAX_LIMIT = 1000
MAX_QUERY_CHARS = 1000
MAX_GLOB_CHARS = 1000


def check_input(query: str, method: str, limit: int) -> None:
    """Refuse an empty or over-long query, an unknown method or a limit out of range."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("SEARCH_EMPTY_QUERY", "the query is empty; pass words, an identifier or a pattern")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput("SEARCH_QUERY_TOO_LONG", f"the query has {len(query)} characters; use at most "
                           f"{MAX_QUERY_CHARS}")
    if method not in METHODS:
        raise InvalidInput("SEARCH_INVALID_METHOD", f"no search method {method!r}; use one of {', '.join(METHODS)}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput("SEARCH_INVALID_LIMIT", f"limit must be a whole number from 1 to {MAX_LIMIT}")


def check_glob(glob: str | None) -> None:
    """Refuse a path glob that is not one (``SEARCH_INVALID_GLOB``): not text, too long, or with
    a ``[`` whose set is never closed. ``fnmatch`` would read such a ``[`` literally and the code
    index's SQLite ``GLOB`` as a set that never matches, so the two scans disagree and the answer
    would be a silent "no results"."""
    if glob is None:
        return
    if not isinstance(glob, str):
        raise InvalidInput("SEARCH_INVALID_GLOB", f"the path glob must be text; got {type(glob).__name__}")
    if len(glob) > MAX_GLOB_CHARS:
        raise InvalidInput("SEARCH_INVALID_GLOB", f"the path glob has {len(glob)} characters; use at most "
                           f"{MAX_GLOB_CHARS}")
    i, n = 0, len(glob)
    while i < n:
        if glob[i] == "[":
            j = i + 1
            if j < n and glob[j] in "!^":
                j += 1
            if j < n and glob[j] == "]":  # a ] first in the set is one of its characters
                j += 1
            j = glob.find("]", j)
            if j < 0:
                raise InvalidInput(
                    "SEARCH_INVALID_GLOB",
                    f"the path glob {glob!r} opens a [set] at character {i + 1} that is never closed; close it"
                    " with ], or write [[] to match a literal [")
            i = j
        i += 1
