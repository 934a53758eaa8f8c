"""Lossy line filters: ``aggressive`` (comments, docstrings, blank lines) and ``entropy``."""

from __future__ import annotations

import math
import re
from collections import Counter

from leanctx.context.langs import DATA_LANGUAGES, comment_syntax
from leanctx.context.modes.rendered import Rendered, footer, source_lines
from leanctx.context.symbols import treesitter as ts

__all__ = ["render_aggressive", "render_entropy", "strip_comments"]


def _ts_comment_ranges(language: str, src: bytes) -> list[tuple[int, int]]:
    tree = ts.parser_for(language).parse(src)
    ranges: list[tuple[int, int]] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        t = node.type
        if "comment" in t:
            ranges.append((node.start_byte, node.end_byte))
            continue
        if language == "python" and t in {"module", "block"}:
            first = node.named_children[0] if node.named_children else None
            if first is not None and (
                first.type in {"string", "concatenated_string"}
                or (first.type == "expression_statement" and len(first.named_children) == 1
                    and first.named_children[0].type in {"string", "concatenated_string"})
            ):
                ranges.append((first.start_byte, first.end_byte))
        if node.child_count:
            stack.extend(node.children)
    return sorted(ranges)


def _scan_comment_ranges(language: str, text: str) -> list[tuple[int, int]]:
    """Character ranges of comments, skipping string literals (a simple lexer, no grammar)."""
    syn = comment_syntax(language)
    ranges: list[tuple[int, int]] = []
    i, n = 0, len(text)
    quote = ""
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                quote = ""
                continue
            i += 1
            continue
        if c in "\"'`":
            quote = text[i : i + 3] if text[i : i + 3] in {'"""', "'''"} else c
            i += len(quote)
            continue
        hit = False
        for open_, close in syn.block:
            if text.startswith(open_, i):
                end = text.find(close, i + len(open_))
                end = n if end < 0 else end + len(close)
                ranges.append((i, end))
                i, hit = end, True
                break
        if hit:
            continue
        for tok in syn.line:
            if text.startswith(tok, i) and not (tok == "#" and text.startswith("#!", i) and i == 0):
                end = text.find("\n", i)
                end = n if end < 0 else end
                ranges.append((i, end))
                i, hit = end, True
                break
        if not hit:
            i += 1
    return ranges


def strip_comments(language: str, text: str) -> str:
    """``text`` without comments (and Python docstrings); line structure otherwise kept."""
    if ts.supported(language):
        src = text.encode("utf-8")
        ranges = _ts_comment_ranges(language, src)
        out = bytearray()
        pos = 0
        for s, e in ranges:
            if s < pos:
                continue
            out += src[pos:s]
            out += b"\n" * src.count(b"\n", s, e)
            pos = e
        out += src[pos:]
        return out.decode("utf-8", errors="replace")
    parts: list[str] = []
    pos = 0
    for s, e in _scan_comment_ranges(language, text):
        parts.append(text[pos:s])
        parts.append("\n" * text.count("\n", s, e))
        pos = e
    parts.append(text[pos:])
    return "".join(parts)


def render_aggressive(path: str, text: str, language: str) -> Rendered:
    lines = source_lines(text)
    n = len(lines)
    stripped = source_lines(strip_comments(language, text)) if language not in {"text", "markdown"} else lines
    kept = [ln.rstrip() for ln in stripped if ln.strip()]
    removed = n - len(kept)
    note = f"{removed} comment/docstring/blank {'line' if removed == 1 else 'lines'} removed" if removed else None
    body = "\n".join([*kept, footer("aggressive", n, note)])
    return Rendered(mode="aggressive", path=path, language=language, text=body, line_count=n,
                    shown_lines=len(kept), omitted_lines=removed, omitted=note)


_PUNCT_ONLY = re.compile(r"^[\s{}()\[\];,]*$")
# Lines that only close a block (the indentation of what follows still shows the structure) or
# do nothing. Lines that change control flow are never among them: dropping ``continue``,
# ``break``, ``return``, ``else:``, ``try:`` or ``finally:`` would show different code (the lines
# after an ``else:`` would read as the ``if``'s body).
_END_WORDS = {"end", "fi", "done", "esac", "endif", "endfor", "endwhile", "end;", "pass", "}", "...",
              "#endif", "@end"}
_LETTER = re.compile(r"[^\W\d_]")


def _entropy(s: str) -> float:
    counts = Counter(s)
    total = len(s)
    return -sum(c / total * math.log2(c / total) for c in counts.values())


def render_entropy(path: str, text: str, language: str, repeat_limit: int = 2, min_bits: float = 2.0) -> Rendered:
    """Drop blank lines, lone punctuation/closers, block-closing keywords, low-entropy lines and (in
    data and prose: ``langs.DATA_LANGUAGES``) repeated lines. In code, a line with a name in it is a
    statement, and a statement seen before is still one more statement (a third ``else:`` or
    ``log();``): only rulers and fills without a letter are dropped there, never a line that
    changes control flow."""
    data = language in DATA_LANGUAGES
    lines = source_lines(text)
    n = len(lines)
    seen: Counter[str] = Counter()
    kept: list[str] = []
    reasons: Counter[str] = Counter()
    for ln in lines:
        s = ln.strip()
        if not s:
            reasons["blank"] += 1
            continue
        if _PUNCT_ONLY.match(s):
            reasons["braces"] += 1
            continue
        if s in _END_WORDS:
            reasons["trivial"] += 1
            continue
        if data and len(s) < 40:
            seen[s] += 1
            if seen[s] > repeat_limit:
                reasons["repeated"] += 1
                continue
        # low entropy: rulers and fills (``====``, ``0000``); in code, a line with a name in it
        # (``x = 0``) is a statement, never dropped for being short
        if len(s) >= 3 and _entropy(s) < min_bits and (data or not _LETTER.search(s)):
            reasons["low-entropy"] += 1
            continue
        kept.append(ln.rstrip())
    dropped = n - len(kept)
    detail = ", ".join(f"{k} {v}" for k, v in reasons.most_common())
    note = f"{dropped} low-information {'line' if dropped == 1 else 'lines'} dropped ({detail})" if dropped else None
    body = "\n".join([*kept, footer("entropy", n, note)])
    return Rendered(mode="entropy", path=path, language=language, text=body, line_count=n,
                    shown_lines=len(kept), omitted_lines=dropped, omitted=note)
