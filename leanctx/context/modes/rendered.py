"""The result of a read mode, and helpers shared by the modes."""

from __future__ import annotations

import re

import msgspec

__all__ = ["Rendered", "footer", "parse_footer", "plural", "source_lines"]


class Rendered(msgspec.Struct, frozen=True):
    """A file as rendered by a read mode.

    ``line_count`` is the number of lines of the source file; ``shown_lines`` how many of them
    appear in ``text`` (verbatim or as a declaration); ``omitted_lines`` how many do not, and
    ``omitted`` says what was left out (``None`` when nothing was). ``reason`` explains the
    choice of ``auto``; ``requested`` is the mode string the caller asked for.
    """

    mode: str
    path: str
    language: str
    text: str
    line_count: int
    shown_lines: int
    omitted_lines: int
    omitted: str | None = None
    reason: str | None = None
    requested: str = ""


def source_lines(text: str) -> list[str]:
    """Lines of a file as editors count them (a final newline does not open a new line)."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def plural(n: int, word: str) -> str:
    """``1 line``, ``2 lines``, ``1200 declarations`` (no thousands separator, like the headers)."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def footer(mode: str, line_count: int, note: str | None) -> str:
    """The last line of a non-full rendering: mode, size and what is not shown."""
    tail = f" · {note}" if note else ""
    return f"[{mode} · {plural(line_count, 'line')}{tail}]"


_FOOTER = re.compile(r"^\[(?P<mode>[^\]\n]+?) · (?P<n>\d+) lines?(?: · (?P<note>[^\n]*))?\]$")


def parse_footer(line: str) -> tuple[str, int, str | None] | None:
    """``footer``'s line read back: (mode, line count, note), for any line count (``0 lines``,
    ``1 line``, ``2 lines``); None when ``line`` is not a footer. The footer is always the last
    line of a non-full rendering, so a caller that moves it elsewhere looks at that line only."""
    m = _FOOTER.match(line)
    if m is None:
        return None
    return m.group("mode"), int(m.group("n")), m.group("note")
