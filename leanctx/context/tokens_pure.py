"""Exact token counts in pure Python, for a process that counts little.

Building tiktoken's encoder from 200,000 ranks costs ~200 ms of CPU, more than a short CLI call
spends on everything else. A call that counts a few kilobytes counts them here instead, with the
two steps tiktoken itself runs: split the text with the encoding's pattern, then byte-pair-merge
each piece with the same ranks (``count_bpe`` is tiktoken's ``_byte_pair_merge``: the leftmost
lowest-ranked pair merges first). The counts are tiktoken's, not an estimate.

Only *eligible* text is counted here (``eligible``): ASCII, plus punctuation and symbols
(``SYMBOLS``: dashes, quotes, bullets, arrows, box drawing, math, emoji...). On such text the
patterns' Unicode classes reduce to ASCII ranges: ``\\p{L}`` is ``[A-Za-z]``, ``\\p{N}`` is
``[0-9]``, ``\\s`` (White_Space) is ``[\\t\\n\\v\\f\\r ]``, no character is a mark, and every
symbol is "neither letter, digit nor space", which is what the patterns' negated classes
match. Python's ``re`` has the possessive quantifiers cl100k uses (3.11+), and ``\\Z`` stands
for fancy-regex's ``$`` (end of text only). Text with any other character (letters beyond
ASCII, digits of other scripts, combining marks, spaces such as U+00A0) goes to tiktoken.
tests/context/test_tokens_cache.py compares the counts with tiktoken's on the repository's
files, on random text, and on every symbol of ``SYMBOLS`` in many contexts.
"""

from __future__ import annotations

import re
from typing import Final, Protocol

__all__ = ["PATTERNS", "SYMBOLS", "OverBudget", "PureCounter", "Ranks", "count_bpe", "eligible"]


class Ranks(Protocol):
    """``{token bytes: rank}``: a dict, or ``tokens_cache.SortedRanks`` (looked up in place)."""

    def get(self, key: bytes, default: int, /) -> int: ...

    def __contains__(self, key: object, /) -> bool: ...

_WS = r"\t\n\x0b\x0c\r "
_CONTRACTION = r"(?:'(?:[sStTmMdD]|[rR][eE]|[vV][eE]|[lL][lL]))"

# tiktoken's patterns (tokens._PAT_STR) on eligible text, alternative for alternative.
PATTERNS: Final[dict[str, re.Pattern[str]]] = {
    "o200k_base": re.compile("|".join([
        rf"[^\r\nA-Za-z0-9]?[A-Z]*[a-z]+{_CONTRACTION}?",
        rf"[^\r\nA-Za-z0-9]?[A-Z]+[a-z]*{_CONTRACTION}?",
        r"[0-9]{1,3}",
        rf" ?[^{_WS}A-Za-z0-9]+[\r\n/]*",
        rf"[{_WS}]*[\r\n]+",
        rf"[{_WS}]+(?![^{_WS}])",
        rf"[{_WS}]+",
    ])),
    "cl100k_base": re.compile("|".join([
        r"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])",
        r"[^\r\nA-Za-z0-9]?+[A-Za-z]++",
        r"[0-9]{1,3}+",
        rf" ?[^{_WS}A-Za-z0-9]++[\r\n]*+",
        rf"[{_WS}]++\Z",
        rf"[{_WS}]*[\r\n]",
        rf"[{_WS}]+(?![^{_WS}])",
        rf"[{_WS}]",
    ])),
}

# Punctuation and symbols beyond ASCII (general categories P* and S*; a few code points of these
# blocks unassigned in Python 3.11's Unicode 14 are symbols in later versions, symbols either way).
# Left out on purpose: letters and digits (ª µ º ¹ ² ³ ¼ ½ ¾, ❶-➓), spaces (U+00A0, U+2028,
# U+2029, U+205F), marks and format characters (U+00AD, U+200B-U+200F, U+2060-U+206F, U+FE0F).
SYMBOLS: Final[tuple[tuple[int, int], ...]] = (
    (0x00A1, 0x00A9), (0x00AB, 0x00AC), (0x00AE, 0x00B1), (0x00B4, 0x00B4), (0x00B6, 0x00B8),
    (0x00BB, 0x00BB), (0x00BF, 0x00BF), (0x00D7, 0x00D7), (0x00F7, 0x00F7),
    (0x2010, 0x2027), (0x2030, 0x205E), (0x20A0, 0x20C0), (0x2190, 0x23FF), (0x2500, 0x2775),
    (0x2794, 0x27BF), (0x2B00, 0x2BFF),
    (0x1F300, 0x1F5FF), (0x1F600, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F900, 0x1F9FF),
)
_OTHER = re.compile("[^\x00-\x7f" + "".join(f"{chr(a)}-{chr(b)}" for a, b in SYMBOLS) + "]")

_NONE: Final = 1 << 62  # "no rank": above every real rank
_PIECES_MAX: Final = 1 << 16


def eligible(text: str) -> bool:
    """Whether ``text`` may be counted here (see the module docstring)."""
    return text.isascii() or _OTHER.search(text) is None


def count_bpe(piece: bytes, ranks: Ranks) -> int:
    """Number of tokens tiktoken's byte-pair merge makes of ``piece``."""
    n = len(piece)
    if n < 2:
        return n
    get = ranks.get
    parts = [[i, get(piece[i:i + 2], _NONE)] for i in range(n - 1)]
    parts.append([n - 1, _NONE])
    parts.append([n, _NONE])
    while True:
        best, at = _NONE, -1
        for i in range(len(parts) - 1):
            if parts[i][1] < best:
                best, at = parts[i][1], i
        if at < 0:
            return len(parts) - 1
        size = len(parts)
        if at > 0:
            parts[at - 1][1] = get(piece[parts[at - 1][0]:parts[at + 2][0]], _NONE) if at + 2 < size else _NONE
        parts[at][1] = get(piece[parts[at][0]:parts[at + 3][0]], _NONE) if at + 3 < size else _NONE
        del parts[at + 1]


class OverBudget(Exception):
    """The counter's budget is spent: count with tiktoken instead."""


class PureCounter:
    """Counts eligible text in one encoding within a budget of work; remembers the count of each
    piece it met. The budget is in characters of ordinary text (~0.2-0.5 µs each); a piece that
    needs merging also costs ``len² / 16`` (the merge is quadratic: a 10,000-letter word would
    take seconds here), charged before the work, so a spent budget wastes nothing more."""

    def __init__(self, name: str, ranks: Ranks, budget: int) -> None:
        self.pattern = PATTERNS[name]
        self.ranks = ranks
        self.budget = budget
        self.pieces: dict[str, int] = {}

    def count(self, text: str) -> int:
        """The count of ``text``; ``OverBudget`` when the budget does not cover it."""
        self.budget -= len(text)
        if self.budget < 0:
            raise OverBudget
        pieces, ranks = self.pieces, self.ranks
        n = 0
        for piece in self.pattern.findall(text):
            c = pieces.get(piece)
            if c is None:
                raw = piece.encode("utf-8")
                if raw in ranks:
                    c = 1
                else:
                    self.budget -= len(raw) * len(raw) // 16
                    if self.budget < 0:
                        raise OverBudget
                    c = count_bpe(raw, ranks)
                if len(pieces) < _PIECES_MAX:
                    pieces[piece] = c
            n += c
        return n
