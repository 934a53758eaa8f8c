"""``entropy``: drop the lines that carry neither information nor structure.

Dropped: blank lines; rulers (a comment of only ``-=*#_+.:<>/\\|^`` fill, ``# ------``, or such a
line standing alone between blank lines, ``=====``); in Python, ``pass`` and ``...`` statements;
in logs, a short line seen ``repeat_limit`` times already.

Never dropped, however often it repeats or however little entropy it has: a line that carries
structure or a value. Closing delimiters (``}``, ``]);``, ``end``, ``fi``, ``#endif``), docstring
and fence delimiters (``\"\"\"``, a closing fence), comment delimiters (``*/``), mapping keys
(``test:``, ``steps:``), YAML document markers, Markdown thematic breaks and table rules, a
heading's underline, data values (``100,``, ``"type": "string"``) and control flow (``else:``,
``continue``): dropping any of them would show another file than the one on disk. In structured
data (JSON, YAML, TOML...) that leaves little to drop: ``entropy`` saves there about what its
blank lines weigh.
"""

from __future__ import annotations

import math
from collections import Counter

from leanctx.context.langs import CommentSyntax, comment_syntax
from leanctx.context.modes.rendered import Rendered, footer, source_lines

__all__ = ["render_entropy"]

_TRIVIAL = {"pass", "..."}  # Python statements that do nothing
_RULER_CHARS = frozenset("-=*#_+.:<>/\\|^")
_NO_BARE_RULERS = frozenset({"markdown", "yaml"})  # ``---``, ``***``, ``|---|``: structure there
_REPEATS = frozenset({"log"})  # where a line seen before adds nothing: nowhere else


def _entropy(s: str) -> float:
    counts = Counter(s)
    total = len(s)
    return -sum(c / total * math.log2(c / total) for c in counts.values())


def _fill(s: str, min_bits: float) -> bool:
    s = s.strip()
    return len(s) >= 3 and set(s) <= _RULER_CHARS and _entropy(s) < min_bits


def _comment_ruler(s: str, syn: CommentSyntax, min_bits: float) -> bool:
    """``# -----``, ``// =====``, ``/* **** */``, `` * -----`` (never a comment's opening or closing line)."""
    for tok in syn.line:
        if s.startswith(tok):
            return _fill(s[len(tok):], min_bits)
    for open_, close in syn.block:
        if s.startswith(open_) and s.endswith(close) and len(s) >= len(open_) + len(close):
            return _fill(s[len(open_) : len(s) - len(close)], min_bits)
        if open_ == "/*" and s.startswith("*") and not s.endswith(close):
            return _fill(s[1:], min_bits)
    return False


def render_entropy(path: str, text: str, language: str, repeat_limit: int = 2, min_bits: float = 2.0) -> Rendered:
    """See the module docstring."""
    syn = comment_syntax(language)
    lines = source_lines(text)
    n = len(lines)
    stripped = [ln.strip() for ln in lines]

    def loose(i: int) -> bool:  # no neighbour line of text (a bare ruler next to text underlines it)
        return i < 0 or i >= n or not stripped[i] or _fill(stripped[i], min_bits)

    seen: Counter[str] = Counter()
    kept: list[str] = []
    reasons: Counter[str] = Counter()
    for i, ln in enumerate(lines):
        s = stripped[i]
        if not s:
            reasons["blank"] += 1
            continue
        if language == "python" and s in _TRIVIAL:
            reasons["trivial"] += 1
            continue
        if _comment_ruler(s, syn, min_bits) or (
                language not in _NO_BARE_RULERS and _fill(s, min_bits) and loose(i - 1) and loose(i + 1)):
            reasons["ruler"] += 1
            continue
        if language in _REPEATS and len(s) < 40:
            seen[s] += 1
            if seen[s] > repeat_limit:
                reasons["repeated"] += 1
                continue
        kept.append(ln.rstrip())
    dropped = n - len(kept)
    detail = ", ".join(f"{k} {v}" for k, v in reasons.most_common())
    note = f"{dropped} low-information {'line' if dropped == 1 else 'lines'} dropped ({detail})" if dropped else None
    body = "\n".join([*kept, footer("entropy", n, note)])
    return Rendered(mode="entropy", path=path, language=language, text=body, line_count=n,
                    shown_lines=len(kept), omitted_lines=dropped, omitted=note)
