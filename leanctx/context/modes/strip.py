"""``aggressive``: the file without its comments, docstrings and blank lines, meaning the same code.

What is a comment, what must go out unchanged and which Python docstrings become ``...``:
``modes.comments`` (from a tree-sitter parse). A line is dropped when it is blank after the
comments are cut, unless it lies inside a protected span (a string literal, heredoc, YAML scalar,
Markdown code block, unparsed region): there its blank lines and trailing spaces are the value.
Only lines a comment was cut from lose their trailing whitespace; every other line is sent as
written. Languages with no grammar (``text``, ``log``, ``csv``, ``lock``) lose blank lines only.

A Python file that parsed still parses, with the same AST apart from docstrings; directive
comments (shebang, ``# type:``, ``# noqa``, ``//go:build``, the cgo preamble...) stay.
"""

from __future__ import annotations

import re
from bisect import bisect_left

from leanctx.context.modes.comments import spans
from leanctx.context.modes.rendered import Rendered, footer, source_lines

__all__ = ["render_aggressive", "strip_comments"]

_ENC = "surrogatepass"


def _cut(language: str, src: bytes) -> tuple[bytes, set[int], set[int]]:
    """(source with comments and docstrings cut, each cut span leaving its newlines; indexes of the
    lines whose newline is inside a protected span; indexes of the lines a cut starts on)."""
    sp = spans(language, src)
    out = bytearray()
    pos = 0
    cut_at: list[int] = []
    for s, e, rep in sp.remove:
        if s < pos:
            continue  # nested in a span already cut
        out += src[pos:s]
        out += rep + b"\n" * src.count(b"\n", s, e)
        cut_at.append(s)
        pos = e
    out += src[pos:]
    protected: set[int] = set()
    touched: set[int] = set()
    if sp.protect or cut_at:
        newlines = [m.start() for m in re.finditer(b"\n", src)]
        k = 0
        for s, e in sp.protect:  # both sorted: one pass
            while k < len(newlines) and newlines[k] < s:  # a heredoc's first line may be blank
                k += 1
            j = k
            while j < len(newlines) and newlines[j] < e:
                protected.add(j)
                j += 1
        touched = {bisect_left(newlines, s) for s in cut_at}
    return bytes(out), protected, touched


def strip_comments(language: str, text: str) -> str:
    """``text`` without comments (and Python docstrings, ``...`` where a body needs one); line
    structure kept: a cut comment leaves its newlines."""
    out, _, _ = _cut(language, text.encode("utf-8", _ENC))
    return out.decode("utf-8", _ENC)


def _aggressive_lines(language: str, text: str) -> list[str]:
    src = text.encode("utf-8", _ENC)
    out, protected, touched = _cut(language, src)
    kept: list[str] = []
    for i, line in enumerate(source_lines(out.decode("utf-8", _ENC))):
        if i in protected:
            kept.append(line)
        elif not line.strip():
            continue
        elif i in touched:
            short = line.rstrip()
            kept.append(short + " " if short.endswith("\\") and short != line else short)  # ``a\ `` stays an escape
        else:
            kept.append(line)
    return kept


def render_aggressive(path: str, text: str, language: str) -> Rendered:
    lines = source_lines(text)
    n = len(lines)
    kept = _aggressive_lines(language, text)
    removed = n - len(kept)
    note = f"{removed} comment/docstring/blank {'line' if removed == 1 else 'lines'} removed" if removed else None
    body = "\n".join([*kept, footer("aggressive", n, note)])
    return Rendered(mode="aggressive", path=path, language=language, text=body, line_count=n,
                    shown_lines=len(kept), omitted_lines=removed, omitted=note)
