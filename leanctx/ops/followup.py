"""What following a cap notice will cost: the tokens of the rows a later ``expand`` sends.

A capped answer (expand, and the read handler's notices) points at ``lean-ctx expand A… --lines
N-M``, which sends its lines numbered ``N:line``; the "~N tokens" the notice announces is the
cost of exactly those rows (each with its newline), so following the notice costs what was
announced (plus the notices of the answers themselves when the rest needs several).

Counting the whole rest at every step of a chain through a huge archive would make the chain
quadratic (each answer recounts everything after it), so only a bounded amount is counted:

- a rest of at most ``EXACT_CHARS`` characters (as sent) is counted exactly;
- a longer one is **estimated**: ``SAMPLE_WINDOWS`` windows of as many consecutive rows each,
  spread evenly over it (about ``SAMPLE_CHARS`` characters in all), are counted; each row's
  tokens are fitted as ``a + b * its characters`` (least squares: a row's number and newline
  cost about the same whatever its length), and the fit is applied to the rest's exact number
  of rows and characters (within ~1-2 % on code, logs, hex, CJK, mixed line lengths).
  ``Cost.estimated`` says so, and the notice says "estimated from a sample of them". A single
  line (``plain_cost``: the rest of a line cut by characters) is estimated from windows of it,
  by its tokens per character.

Either way a call costs O(``EXACT_CHARS``) tokenizer work plus O(rows) character sums.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

__all__ = ["EXACT_CHARS", "SAMPLE_CHARS", "SAMPLE_WINDOWS", "Cost", "lines_rest", "number_chars", "numbered_cost",
           "plain_cost"]

EXACT_CHARS = 131_072  # a rest this long (characters as sent) or shorter is counted exactly
SAMPLE_WINDOWS = 64
SAMPLE_CHARS = 32_768  # characters counted, in all, to estimate a longer rest


class Cost(msgspec.Struct, frozen=True):
    tokens: int
    estimated: bool = False  # from a sample of the rest, not a count of all of it

    def __add__(self, other: object) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(self.tokens + other.tokens, self.estimated or other.estimated)


def _costs(pieces: list[str], encoding: str) -> int:
    from ..context.tokens import token_costs

    return sum(token_costs(pieces, encoding))


def number_chars(first: int, last: int) -> int:
    """Characters of the numbers ``first..last`` written out (``sum(len(str(k)))``, in closed form)."""
    total, lo = 0, 1
    while lo <= last:
        hi = lo * 10 - 1
        a, b = max(first, lo), min(last, hi)
        if a <= b:
            total += (b - a + 1) * len(str(lo))
        lo *= 10
    return total


def numbered_cost(rows: Sequence[tuple[int, str]], encoding: str, chars: int | None = None) -> Cost:
    """Tokens of ``rows`` rendered as expand's numbered rows (``f"{k}:{line}\\n"`` each);
    ``chars``: their number of characters so rendered, when the caller knows it."""
    if not rows:
        return Cost(0)
    if chars is None:
        chars = sum(len(t) + len(str(k)) + 2 for k, t in rows)
    if chars <= EXACT_CHARS:
        return Cost(_costs([f"{k}:{t}\n" for k, t in rows], encoding))
    n = len(rows)
    windows = min(SAMPLE_WINDOWS, n)
    per = max(1, SAMPLE_CHARS // windows)
    take = max(1, round(per * n / chars))  # rows per window: a fixed number, so long rows are not passed over
    sample: list[str] = []
    for w in range(windows):
        i = w * n // windows
        sample.extend(f"{k}:{t}\n"[:per] for k, t in rows[i:i + take])  # a row longer than a window: in part
    return Cost(_regression(sample, n, chars, encoding), estimated=True)


def _regression(sample: list[str], rows: int, chars: int, encoding: str) -> int:
    """Tokens of ``rows`` rows of ``chars`` characters in all, from a sample of them: each row's
    tokens fitted as ``a + b * its characters`` (a row's number and newline cost about the
    same whatever its length; its text, about its length), then summed over the known totals."""
    from ..context.tokens import token_costs

    ts = token_costs(sample, encoding)
    cs = [len(x) for x in sample]
    m = len(ts)
    mc, mt = sum(cs) / m, sum(ts) / m
    var = sum((c - mc) ** 2 for c in cs)
    b = sum((c - mc) * (t - mt) for c, t in zip(cs, ts, strict=True)) / var if var else 0.0
    return max(0, round(mt * rows + b * (chars - mc * rows)))


def lines_rest(lines: Sequence[str], head: int, chars: int, encoding: str) -> Cost:
    """What following a capped answer costs when it sent ``lines[:head]`` whole and the first
    ``chars`` characters of ``lines[head]``: the rest of that line in character ranges
    (``L[A-B]``), then every later line numbered from ``head + 1`` (1-based) by ``--lines``.
    For the read handler's notice (its view is archived as these lines)."""
    cost = Cost(0)
    if chars and head < len(lines):
        cost = plain_cost(lines[head][chars:], encoding)
        head += 1
    if head >= len(lines):
        return cost
    size = sum(map(len, lines[head:])) + number_chars(head + 1, len(lines)) + 2 * (len(lines) - head)
    return cost + numbered_cost(list(enumerate(lines[head:], head + 1)), encoding, size)


def plain_cost(text: str, encoding: str) -> Cost:
    """Tokens of ``text`` as sent in character ranges (``L[A-B]``: as it is, no number)."""
    if len(text) <= EXACT_CHARS:
        return Cost(_costs([text], encoding) if text else 0)
    windows = SAMPLE_WINDOWS
    per = SAMPLE_CHARS // windows
    sample = [text[w * len(text) // windows:][:per] for w in range(windows)]
    counted = sum(len(s) for s in sample)
    return Cost(round(_costs(sample, encoding) * len(text) / counted), estimated=True)
