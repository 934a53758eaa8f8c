"""The answer cap of expand, shell, tree and search: the same cap as reads.

Clients reject tool results over 25,000 tokens. Reads are capped at ``DEFAULT_CAP_TOKENS``
(``leanctx.commands.read``, 20,000) and at most ``MAX_CAP_TOKENS`` (24,000); these constants
are imported from there, not copied, so every answer shares one cap.

``cap_lines(lines, cap, notice)`` returns the lines joined when they fit; otherwise the first
lines that fit (and, with ``tail_tokens``, the last few lines too), the notice that
``notice(cut)`` writes for what was left out, and the :class:`Cut` that says exactly what was
sent. When not even the first line fits, that line is cut by characters (``Cut.chars``), so
an over-long single line (a minified file) is sent in part rather than not at all: with a cap
of at least ``MIN_CAP_TOKENS`` something is always sent, so a chain of answers makes progress. The whole
text returned, notice included, is at most ``cap`` tokens (the tokenizer's count of exactly
that text, in the encoding spec given: ``cl100k_base*1.1`` counts with Gemini's correction, so
per-line costs and the character cut of a long line apply that factor too).

With ``rest`` (``expand``: a chain through a huge archive), the lines are counted only as far
as the answer can reach (a line too long to fit is not counted at all: ``char_prefix`` cuts
it), never the whole selection: what was not sent is costed by ``rest(head, chars)`` (a
:class:`~leanctx.ops.followup.Cost`, maybe estimated: ``Cut.estimated``), so each answer of a
chain costs about its own size, not the size of everything after it. ``tail`` is not
available then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import msgspec

from ..commands.read import (
    DEFAULT_CAP_TOKENS,
    MAX_CAP_TOKENS,
    MIN_CAP_TOKENS,
    check_cap,
    cut_lines,
)

if TYPE_CHECKING:
    from .followup import Cost

__all__ = ["ANSWER_CAP_TOKENS", "MAX_CAP_TOKENS", "MIN_CAP_TOKENS", "Cut", "cap_lines", "char_prefix", "check_cap"]

ANSWER_CAP_TOKENS = DEFAULT_CAP_TOKENS
_SCAN_CHARS_PER_TOKEN = 64  # a token is never longer than this many characters in practice


class Cut(msgspec.Struct, frozen=True):
    """What a capped answer sent of ``total`` lines: lines ``1..head`` whole, then (``chars``
    > 0) the first ``chars`` characters of line ``head + 1``, and the last ``tail`` lines."""

    total: int
    head: int
    tail: int = 0
    chars: int = 0  # characters of line head+1 sent (it alone did not fit); 0: none
    rest_tokens: int = 0  # tokens of what was not sent (per-line counts, approximate; ``rest``'s cost when given)
    whole_tokens: int = 0  # tokens of the whole text the cap cut (counted once, by ``cap_lines``; with
    # ``rest``: what was sent, counted, plus the rest's cost)
    estimated: bool = False  # ``rest_tokens`` is an estimate from a sample (``rest`` said so)
    text_tokens: int = 0  # the tokenizer count of exactly the text returned with this cut

    @property
    def first_unsent(self) -> int:
        """1-based number of the first line not sent whole."""
        return self.head + 1

    @property
    def last_unsent(self) -> int:
        """1-based number of the last line not sent whole."""
        return self.total - self.tail

    @property
    def unsent(self) -> int:
        """Lines not sent whole (a line sent in part counts)."""
        return self.total - self.head - self.tail


def _count(text: str, encoding: str) -> int:
    from ..context.tokens import count_tokens

    return count_tokens(text, encoding)


def _costs(lines: Sequence[str], encoding: str) -> list[int]:
    """The count of each line with its newline (an encoding spec's factor applied)."""
    from ..context.tokens import token_costs

    return token_costs([ln + "\n" for ln in lines], encoding)


def char_prefix(text: str, budget: int, encoding: str) -> int:
    """How many leading characters of ``text`` fit in ``budget`` tokens (at least 0)."""
    from ..context.tokens import base_budget, get_encoding

    budget = base_budget(budget, encoding)  # the spec's factor: counted tokens → ids of its base encoding
    if budget <= 0 or not text:
        return 0
    enc = get_encoding(encoding)
    window = text[: budget * _SCAN_CHARS_PER_TOKEN]
    toks = enc.encode_ordinary(window)
    if len(toks) <= budget:
        return len(window)
    prefix = enc.decode(toks[:budget], errors="replace")
    n = len(prefix)
    while n and not text.startswith(prefix[:n]):  # a multi-byte character cut in half
        n -= 1
    while n and len(enc.encode_ordinary(text[:n])) > budget:  # re-tokenized, the prefix may cost more
        n -= max(1, n // 64)
    return max(n, 0)


def _head_costs(lines: Sequence[str], cap: int, encoding: str) -> tuple[list[int], bool]:
    """The costs of the leading lines (each with its newline), counted until they pass ``cap``
    (all of them when they do not). A line longer than ``_SCAN_CHARS_PER_TOKEN`` characters per
    token left cannot fit: it is not counted, costs ``cap + 1`` and ends the list. The flag:
    every line was counted."""
    from ..context.tokens import token_costs

    out: list[int] = []
    acc = 0
    for ln in lines:
        if len(ln) > _SCAN_CHARS_PER_TOKEN * (cap - acc + 1):
            out.append(cap + 1)
            return out, False
        c = token_costs([ln + "\n"], encoding)[0]
        out.append(c)
        acc += c
        if acc > cap:
            break
    return out, len(out) == len(lines)


def cap_lines(lines: Sequence[str], cap: int, notice: Callable[[Cut], str], *, encoding: str = "o200k_base",
              tail_tokens: int = 0, tail_lines: int = 0,
              rest: Callable[[int, int], Cost] | None = None) -> tuple[str, Cut | None]:
    """``"\\n".join(lines)`` when it fits in ``cap`` tokens, else the capped text and its cut
    (the notice line stands where lines were left out). ``rest(head, chars)``: the cost of what
    a cut leaves out (see the module doc); the lines are then counted only as far as needed."""
    if rest is not None:
        return _cap_head(lines, cap, notice, encoding, rest)
    whole = "\n".join(lines)
    whole_tokens = _count(whole, encoding)
    if whole_tokens <= cap:
        return whole, None
    costs = _costs(lines, encoding)
    total = len(lines)
    tail = 0
    used_tail = 0
    while tail < min(tail_lines, total - 1) and used_tail + costs[total - 1 - tail] <= tail_tokens:
        used_tail += costs[total - 1 - tail]
        tail += 1
    cum: list[int] = []
    acc = 0
    for c in costs:
        acc += c
        cum.append(acc)

    def build(head: int, chars: int, tail: int) -> tuple[str, Cut]:
        sent = cum[head - 1] if head else 0
        sent += cum[-1] - cum[total - tail - 1] if tail else 0
        if chars:
            sent += _count(lines[head][:chars], encoding)
        cut = Cut(total, head, tail, chars, max(0, cum[-1] - sent), whole_tokens)
        return _join(lines, head, chars, tail, notice(cut)), cut

    return _fit(lines, cap, cum, build, encoding, tail)


def _join(lines: Sequence[str], head: int, chars: int, tail: int, notice: str) -> str:
    parts = list(lines[:head])
    if chars:
        parts.append(lines[head][:chars])
    parts.append(notice)
    parts.extend(lines[len(lines) - tail:] if tail else [])
    return "\n".join(parts)


def _cap_head(lines: Sequence[str], cap: int, notice: Callable[[Cut], str], encoding: str,
              rest: Callable[[int, int], Cost]) -> tuple[str, Cut | None]:
    """``cap_lines`` with ``rest``: the head of the lines, counted only as far as the cap reaches."""
    costs, counted = _head_costs(lines, cap, encoding)
    total = len(lines)
    if counted and (sum(costs) <= cap or _count("\n".join(lines), encoding) <= cap):
        return "\n".join(lines), None  # (per-line counts never undercount the lines joined; all counted: small)
    cum: list[int] = []
    acc = 0
    for c in costs:
        acc += c
        cum.append(acc)
    memo: dict[tuple[int, int], tuple[str, Cut]] = {}

    def build(head: int, chars: int, tail: int) -> tuple[str, Cut]:
        if (head, chars) not in memo:
            sent = (cum[head - 1] if head else 0) + (_count(lines[head][:chars], encoding) if chars else 0)
            r = rest(head, chars)
            cut = Cut(total, head, 0, chars, r.tokens, sent + r.tokens, r.estimated)
            memo[head, chars] = _join(lines, head, chars, 0, notice(cut)), cut
        return memo[head, chars]

    # the notice's size, with the widest figure it can hold: the rest is not costed just for this
    widest = notice(Cut(total, 0, 0, 0, 10**12, 0, True))
    return _fit(lines, cap, cum, build, encoding, 0, overhead=_count(widest, encoding))


def _fit(lines: Sequence[str], cap: int, cum: list[int], build: Callable[[int, int, int], tuple[str, Cut]],
         encoding: str, tail: int, *, overhead: int | None = None) -> tuple[str, Cut]:
    """The longest head (and ``tail`` lines) that fits with its notice, a long line cut by characters.
    ``overhead``: the notice's tokens, when known without building the notice alone."""
    total = len(lines)
    limit = min(len(cum), total - tail)
    slack = 0
    for _ in range(8):
        fixed = _count(build(0, 0, tail)[0], encoding) if overhead is None else overhead
        budget = max(0, cap - fixed - slack)
        head = cut_lines(cum, budget, limit)
        chars = 0
        if head < total - tail and (head == 0 or cum[head - 1] < budget // 2) and lines[head]:
            # the next line alone is long: send what fits of it, cut by characters
            room = budget - (cum[head - 1] if head else 0)
            chars = char_prefix(lines[head], room, encoding)
            if chars >= len(lines[head]):  # it fits without its newline: send all of it but the last character
                chars = len(lines[head]) - 1 if head == 0 else 0  # (nothing sent at all would make no progress)
        text, cut = build(head, chars, tail)
        n = _count(text, encoding)
        if n <= cap:
            return text, msgspec.structs.replace(cut, text_tokens=n)
        slack += n - cap + 8
        if slack > cap // 2 and tail:
            tail, slack = 0, 0
    text, cut = build(0, 0, 0)  # the notice alone
    return text, msgspec.structs.replace(cut, text_tokens=_count(text, encoding))
