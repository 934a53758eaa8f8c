"""The answer cap of ``--json`` output (``read``, ``expand``, ``shell``, ``compress``).

An answer's text is capped at the answer cap (``leanctx.commands.read``: 20,000 tokens by default,
24,000 at most) counted on the text itself. In a JSON string that text is escaped: every newline,
tab, quote and backslash gains a backslash (control characters become ``\\u00XX``; non-ASCII is
written as is, never ``\\uXXXX``), and the escaped text costs more tokens, ~10 % for ordinary
code and up to 40 % or more for text full of quotes, backslashes and tabs. So with ``--json`` the
CLI asks the operation for a smaller text cap, leaving room for the escaping and for the
envelope's other fields, so that the JSON printed stays within the cap the plain answer has:

- the escaping's cost is measured before the call on the text the answer will be cut from, when
  the CLI has it (``read``: the files; ``expand``: the archive; ``compress``: the captured
  output): the highest ratio of escaped to plain tokens over windows of about one answer's
  length (a plain answer never needs it: the text cap is the cap);
- ``shell`` cannot see its output before the command runs: its text cap assumes
  ``SHELL_JSON_RATIO`` (1.5).

The answer is a real one (the operation records exactly the text it returns, with its count);
only its cap is lower. An estimate can still be beaten (a shell output more escape-heavy than
1.5, a file whose worst part is past what is scanned, a cap so small that the minimum wins): the
JSON is then printed whole, and a ``warning[JSON_OVER_CAP]`` line on stderr says by how much.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

import msgspec

from ...commands.read import MIN_CAP_TOKENS

__all__ = ["ENVELOPE_RESERVE", "SHELL_JSON_RATIO", "emit_capped", "escape_ratio", "json_tokens", "text_cap"]

ENVELOPE_RESERVE = 250  # tokens of one answer object's other fields (hashes, counts, flags, names)
SHELL_JSON_RATIO = Fraction(3, 2)  # assumed escaping cost of an output not seen yet
SCAN_CHARS = 4_000_000  # at most this much of the source text is measured
_CHARS_PER_TOKEN = 4  # a window is about one answer: cap × this many characters
_MARGIN = Fraction(51, 50)  # 2 % on top of the measured ratio (joins, header and notice lines)

_enc = msgspec.json.Encoder()


def _escaped(text: str) -> str:
    """``text`` as it appears inside a JSON string of the CLI's output (quotes removed)."""
    try:
        return _enc.encode(text).decode()[1:-1]
    except UnicodeError:  # lone surrogates (undecodable bytes): measured as their escapes
        return _enc.encode(text.encode("utf-8", "backslashreplace").decode()).decode()[1:-1]


def json_tokens(value: Any, encoding: str) -> int:
    """Tokens of ``value``'s JSON line, as ``render.emit_json`` prints it."""
    from ...context.tokens import count_tokens

    return count_tokens(_enc.encode(msgspec.to_builtins(value)).decode(), encoding)


def _windows(text: str, size: int) -> Iterable[str]:
    """``text`` cut at line ends into pieces of about ``size`` characters."""
    start, n = 0, len(text)
    while start < n:
        end = min(n, start + size)
        if end < n:
            nl = text.rfind("\n", start + size // 2, end)
            end = nl + 1 if nl >= 0 else end
        yield text[start:end]
        start = end


def escape_ratio(texts: Iterable[str], window_chars: int, encoding: str) -> Fraction:
    """The highest ratio of JSON-escaped to plain tokens over windows of ``window_chars``
    characters of ``texts`` (at most ``SCAN_CHARS`` in all); 1 for text with nothing to escape."""
    from ...context.tokens import count_tokens

    worst = Fraction(1)
    budget = SCAN_CHARS
    for text in texts:
        if budget <= 0:
            break
        text = text[:budget]
        budget -= len(text)
        for w in _windows(text, max(1, window_chars)):
            plain = count_tokens(w, encoding)
            if plain:
                worst = max(worst, Fraction(count_tokens(_escaped(w), encoding), plain))
    return worst


def text_cap(cap: int, *, encoding: str, sources: Iterable[str] | None = None, answers: int = 1,
             extra: Iterable[str] = ()) -> int:
    """The text cap to ask the operation for, so that its ``--json`` output (``answers`` objects,
    whose other string fields include ``extra``: paths, the command) stays within ``cap``.
    ``sources``: the text the answer is cut from (None: not known before the call, assume
    ``SHELL_JSON_RATIO``). Never below ``MIN_CAP_TOKENS``."""
    from ...context.tokens import count_tokens

    room = cap - answers * ENVELOPE_RESERVE - sum(count_tokens(_escaped(s), encoding) for s in extra)
    if sources is None:
        ratio = SHELL_JSON_RATIO
    else:
        texts = list(sources)
        if sum(count_tokens(_escaped(t[:SCAN_CHARS]), encoding) for t in texts) <= room:
            return max(MIN_CAP_TOKENS, min(cap, room))  # even sent whole, the JSON fits
        ratio = escape_ratio(texts, cap * _CHARS_PER_TOKEN, encoding)
    return max(MIN_CAP_TOKENS, int(room / (ratio * _MARGIN)))


def emit_capped(values: list[Any], cap: int, encoding: str) -> None:
    """Print ``values`` as JSON lines; when together they exceed ``cap`` tokens (the estimate
    was beaten), say so on stderr."""
    from .render import emit_json

    total = 0
    for v in values:
        emit_json(v)
        total += json_tokens(v, encoding)
    if total > cap:
        sys.stderr.write(f"warning[JSON_OVER_CAP]: this JSON is {total:,} tokens, over the {cap:,}-token answer cap"
                         " (its escaping and fields cost more than was foreseen); ask for less (--max-tokens, --lines,"
                         " fewer files)\n")

